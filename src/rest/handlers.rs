//! Kafka Connect's endpoints over the [`Worker`]: paths, query parameters, bodies and status
//! codes as a Connect 4.3 worker answers them; health for orchestrators.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::{error, App};
use crate::config::{self, keys, RawConfig, CONNECTOR_CLASS};
use crate::worker::{ConnectorInfo, StatusView, TargetState, TaskView, WorkerError, WorkerResult};

/// The connector type every pgcdc connector has.
const SOURCE: &str = "source";
/// Debezium's task class, shown in task configs.
const TASK_CLASS: &str = "io.debezium.connector.postgresql.PostgresConnectorTask";
/// The Debezium version whose behaviour pgcdc follows, shown as the plugin's version.
const PLUGIN_VERSION: &str = "3.6.1.Final";

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(root))
        .route("/connector-plugins", get(plugins))
        .route("/connector-plugins/{class}/config/validate", put(validate))
        .route("/connectors", get(list).post(create))
        .route("/connectors/{name}", get(info).delete(delete))
        .route(
            "/connectors/{name}/config",
            get(get_config).put(put_config).patch(patch_config),
        )
        .route("/connectors/{name}/status", get(status))
        .route("/connectors/{name}/tasks", get(tasks))
        .route("/connectors/{name}/tasks/{task}/status", get(task_status))
        .route(
            "/connectors/{name}/tasks/{task}/restart",
            post(restart_task),
        )
        .route("/connectors/{name}/topics", get(topics))
        .route("/connectors/{name}/topics/reset", put(reset_topics))
        .route(
            "/connectors/{name}/offsets",
            get(offsets).patch(alter_offsets).delete(reset_offsets),
        )
        .route("/connectors/{name}/signals", post(signal))
        .route("/connectors/{name}/restart", post(restart))
        .route("/connectors/{name}/pause", put(pause))
        .route("/connectors/{name}/resume", put(resume))
        .route("/connectors/{name}/stop", put(stop))
        .route("/health", get(health))
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
}

/// `GET /`: pgcdc's version and commit. `kafka_cluster_id` is null: a pgcdc worker has no
/// Kafka cluster of its own (each connector names its brokers).
async fn root() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": option_env!("PGCDC_COMMIT").unwrap_or("unknown"),
        "kafka_cluster_id": null,
    }))
}

async fn plugins() -> Json<Value> {
    Json(json!([{
        "class": CONNECTOR_CLASS,
        "type": SOURCE,
        "version": PLUGIN_VERSION,
    }]))
}

/// Runs a change to the worker in a task of its own: a client that disconnects drops the
/// request's future, which must not leave the change half done (a connector stopped and not
/// started again).
async fn detached<T: Send + 'static>(
    change: impl std::future::Future<Output = WorkerResult<T>> + Send + 'static,
) -> WorkerResult<T> {
    tokio::spawn(change)
        .await
        .unwrap_or_else(|e| Err(WorkerError::new(500, format!("the operation failed: {e}"))))
}

/// The values of a repeated query parameter (`expand=status&expand=info`).
fn query_values(query: &Option<String>, name: &str) -> Vec<String> {
    query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .collect()
}

/// A boolean query parameter (absent: false).
fn query_flag(query: &Option<String>, name: &str) -> bool {
    query_values(query, name)
        .last()
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

async fn list(State(app): State<App>, RawQuery(query): RawQuery) -> Json<Value> {
    let expand = query_values(&query, "expand");
    let names = app.worker.names();
    if expand.is_empty() {
        return Json(json!(names));
    }
    let mut out = Map::new();
    for name in names {
        let mut entry = Map::new();
        for what in &expand {
            let v = match what.as_str() {
                "status" => app.worker.status(&name).map(|s| status_json(&s)),
                "info" => app.worker.info(&name).map(|i| info_json(&i)),
                _ => continue,
            };
            if let Ok(v) = v {
                entry.insert(what.clone(), v);
            }
        }
        out.insert(name, Value::Object(entry));
    }
    Json(Value::Object(out))
}

fn info_json(i: &ConnectorInfo) -> Value {
    json!({
        keys::NAME: i.name,
        "config": i.config,
        "tasks": i.tasks.iter().map(|t| json!({"connector": i.name, "task": t})).collect::<Vec<_>>(),
        "type": SOURCE,
    })
}

fn task_json(t: &TaskView, worker_id: &str) -> Value {
    let mut v =
        json!({"id": t.id, "state": t.state, "worker_id": worker_id, "version": PLUGIN_VERSION});
    if let Some(trace) = t.trace.as_ref().filter(|t| !t.is_empty()) {
        v["trace"] = json!(trace);
    }
    v
}

fn status_json(s: &StatusView) -> Value {
    json!({
        keys::NAME: s.name,
        "connector": {"state": s.state, "worker_id": s.worker_id, "version": PLUGIN_VERSION},
        "tasks": s.tasks.iter().map(|t| task_json(t, &s.worker_id)).collect::<Vec<_>>(),
        "type": SOURCE,
    })
}

/// A request body as a JSON object. Errors: Connect's 400 with what is wrong.
fn json_object(body: &Bytes) -> WorkerResult<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(WorkerError::new(
            400,
            "the request body must be a JSON object",
        )),
        Err(e) => Err(WorkerError::new(
            400,
            format!("invalid JSON in the request body: {e}"),
        )),
    }
}

/// A connector config from a JSON object of strings (numbers and booleans are taken as
/// their text, as Connect does).
fn raw_config(obj: &Map<String, Value>) -> WorkerResult<RawConfig> {
    let text = Value::Object(obj.clone()).to_string();
    config::parse_config_text(&text).map_err(|e| WorkerError::new(400, e.message()))
}

/// Connect's `Location`: the connector's URL, on the host the request named.
fn location(headers: &HeaderMap, app: &App, name: &str) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map_or_else(|| app.worker.id().to_string(), str::to_string);
    format!("{}://{host}/connectors/{}", app.scheme, path_segment(name))
}

/// `name` as one URL path segment: unreserved characters kept, every other byte `%XX`.
fn path_segment(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Connect's 201 for a new connector: `Location`, and its info with no task yet.
fn created(headers: &HeaderMap, app: &App, info: &ConnectorInfo) -> Response {
    let mut body = info_json(info);
    body["tasks"] = json!([]);
    let location = location(headers, app, &info.name);
    (
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response()
}

async fn create(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let mut obj = match json_object(&body) {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let target = match obj.remove("initial_state") {
        None => TargetState::Started,
        Some(v) => match v.as_str().and_then(TargetState::from_connect_name) {
            Some(t) => t,
            None => {
                return error(
                    400,
                    format!("Invalid initial state {v}: expected RUNNING, PAUSED or STOPPED"),
                )
            }
        },
    };
    let Some(name) = obj
        .get(keys::NAME)
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return error(
            400,
            "Connector name configuration must be provided: {\"name\": ..., \"config\": {...}}",
        );
    };
    if !obj.get("config").is_some_and(Value::is_object) {
        return error(
            400,
            "Connector config must be provided as a JSON object in \"config\"",
        );
    }
    let raw = match raw_config(&obj) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let worker = app.worker.clone();
    if let Err(e) = detached(async move { worker.create(raw, target).await }).await {
        return e.into_response();
    }
    match app.worker.info(&name) {
        Ok(i) => created(&headers, &app, &i),
        Err(e) => e.into_response(),
    }
}

async fn info(State(app): State<App>, Path(name): Path<String>) -> Response {
    json_or(app.worker.info(&name).map(|i| info_json(&i)))
}

fn json_or(r: WorkerResult<Value>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn get_config(State(app): State<App>, Path(name): Path<String>) -> Response {
    json_or(app.worker.info(&name).map(|i| json!(i.config)))
}

async fn put_config(
    State(app): State<App>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let obj = match json_object(&body) {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let mut raw = match raw_config(&obj) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if let Some(refused) = name_mismatch(&raw, &name) {
        return refused;
    }
    raw.insert(keys::NAME.to_string(), name.clone());
    let (worker, n) = (app.worker.clone(), name.clone());
    let is_new = match detached(async move { worker.put_config(&n, raw).await }).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    match (app.worker.info(&name), is_new) {
        (Ok(i), true) => created(&headers, &app, &i),
        (Ok(i), false) => Json(info_json(&i)).into_response(),
        (Err(e), _) => e.into_response(),
    }
}

/// Connect's 400 for a config whose `name` is not the connector's in the URL.
fn name_mismatch(raw: &RawConfig, name: &str) -> Option<Response> {
    let given = raw.get(keys::NAME).filter(|g| *g != name)?;
    Some(error(
        400,
        format!("Connector name configuration ({given}) doesn't match connector name in the URL ({name})"),
    ))
}

/// `PATCH /connectors/{name}/config`: a JSON object of the keys to change; `null` removes a
/// key. Answers 200 with the connector's info.
async fn patch_config(State(app): State<App>, Path(name): Path<String>, body: Bytes) -> Response {
    let obj = match json_object(&body) {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let remove: Vec<String> = obj
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    let set_obj: Map<String, Value> = obj.into_iter().filter(|(_, v)| !v.is_null()).collect();
    let set = match raw_config(&set_obj) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if let Some(refused) = name_mismatch(&set, &name) {
        return refused;
    }
    let (worker, n) = (app.worker.clone(), name.clone());
    if let Err(e) = detached(async move { worker.patch_config(&n, set, &remove).await }).await {
        return e.into_response();
    }
    json_or(app.worker.info(&name).map(|i| info_json(&i)))
}

async fn delete(State(app): State<App>, Path(name): Path<String>) -> Response {
    let worker = app.worker.clone();
    match detached(async move { worker.delete(&name).await }).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn status(State(app): State<App>, Path(name): Path<String>) -> Response {
    json_or(app.worker.status(&name).map(|s| status_json(&s)))
}

async fn tasks(State(app): State<App>, Path(name): Path<String>) -> Response {
    json_or(app.worker.info(&name).map(|i| {
        let mut config = i.config.clone();
        config.insert("task.class".to_string(), TASK_CLASS.to_string());
        json!(i
            .tasks
            .iter()
            .map(|t| json!({"id": {"connector": i.name, "task": t}, "config": config}))
            .collect::<Vec<_>>())
    }))
}

async fn task_status(
    State(app): State<App>,
    Path((name, task)): Path<(String, String)>,
) -> Response {
    json_or(
        app.worker
            .task_status(&name, &task)
            .map(|t| task_json(&t, app.worker.id())),
    )
}

async fn restart_task(
    State(app): State<App>,
    Path((name, task)): Path<(String, String)>,
) -> Response {
    match app.worker.restart_task(&name, &task) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn topics(State(app): State<App>, Path(name): Path<String>) -> Json<Value> {
    let topics = app.worker.topics(&name);
    Json(json!({ name: {"topics": topics} }))
}

/// Connect's `PUT /connectors/{name}/topics/reset`: 202, no body.
async fn reset_topics(State(app): State<App>, Path(name): Path<String>) -> StatusCode {
    app.worker.reset_topics(&name);
    StatusCode::ACCEPTED
}

/// pgcdc's `POST /connectors/{name}/signals` (Kafka Connect has no such endpoint): a
/// Debezium signal `{"id": ..., "type": ..., "data": {...}}`, acted on by the running
/// connector between transactions. 202 when queued; 400 when the body is not a signal, with
/// what is wrong; 404 for an unknown connector; 409 when signals already wait.
async fn signal(State(app): State<App>, Path(name): Path<String>, body: String) -> Response {
    let signal = match crate::pipeline::signals::parse_signal_json(
        &body,
        crate::pipeline::signals::Channel::Rest,
    ) {
        Ok(mut s) => {
            if s.id.is_empty() {
                s.id = uuid::Uuid::new_v4().to_string();
            }
            s
        }
        Err(why) => {
            return crate::worker::WorkerError::new(400, format!("the body is not a signal: {why}"))
                .into_response()
        }
    };
    if let Err(why) = signal.action() {
        return crate::worker::WorkerError::new(400, format!("the signal is not valid: {why}"))
            .into_response();
    }
    let id = signal.id.clone();
    match app.worker.signal(&name, signal) {
        Ok(()) => (StatusCode::ACCEPTED, Json(json!({ "id": id }))).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn restart(
    State(app): State<App>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let include_tasks = query_flag(&query, "includeTasks");
    let only_failed = query_flag(&query, "onlyFailed");
    match app.worker.restart(&name, include_tasks, only_failed) {
        Ok(None) => StatusCode::NO_CONTENT.into_response(),
        Ok(Some(s)) => (StatusCode::ACCEPTED, Json(status_json(&s))).into_response(),
        Err(e) => e.into_response(),
    }
}

fn target(app: &App, name: &str, t: TargetState, ok: StatusCode) -> Response {
    match app.worker.set_target(name, t) {
        Ok(()) => ok.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn pause(State(app): State<App>, Path(name): Path<String>) -> Response {
    target(&app, &name, TargetState::Paused, StatusCode::ACCEPTED)
}

async fn resume(State(app): State<App>, Path(name): Path<String>) -> Response {
    target(&app, &name, TargetState::Started, StatusCode::ACCEPTED)
}

async fn stop(State(app): State<App>, Path(name): Path<String>) -> Response {
    target(&app, &name, TargetState::Stopped, StatusCode::NO_CONTENT)
}

/// Kafka Connect's `GET /health` (KIP-1017): the worker serves requests.
async fn health() -> Json<Value> {
    Json(json!({
        "status": "healthy",
        "message": "Worker has completed startup and is ready to handle requests.",
    }))
}

/// Liveness: the process answers.
async fn live() -> Json<Value> {
    Json(json!({"status": "live"}))
}

/// Readiness: every connector meant to run has its task `RUNNING` and streaming or taking its
/// snapshot (or has finished), and none has records waiting for Kafka without progress
/// longer than `pgcdc.health.unacknowledged.max.ms`. 503 names the ones that are not ready:
/// with their task state, `CONNECTING` for a `RUNNING` task still connecting to PostgreSQL
/// or Kafka, or `WAITING_FOR_KAFKA`; `reasons` says why in words.
async fn ready(State(app): State<App>) -> Response {
    let mut not_ready = Map::new();
    let mut reasons = Map::new();
    for name in app.worker.names() {
        let Ok(s) = app.worker.status(&name) else {
            continue;
        };
        if s.state != TargetState::Started.connect_name() {
            continue;
        }
        if app.worker.finished(&name) {
            continue;
        }
        let waited = app
            .worker
            .unacknowledged_wait(&name)
            .filter(|w| *w > app.unacknowledged_max);
        match s.tasks.first().map(|t| t.state).unwrap_or("UNASSIGNED") {
            "RUNNING" if !app.worker.working(&name) => {
                not_ready.insert(name, json!("CONNECTING"));
            }
            "RUNNING" => {
                if let Some(w) = waited {
                    reasons.insert(name.clone(), json!(format!(
                        "records have waited {} s for Kafka to acknowledge them, more than pgcdc.health.unacknowledged.max.ms ({} ms): a broker is down, stalled or unreachable",
                        w.as_secs(),
                        app.unacknowledged_max.as_millis())));
                    not_ready.insert(name, json!("WAITING_FOR_KAFKA"));
                }
            }
            task => {
                not_ready.insert(name, json!(task));
            }
        }
    }
    if not_ready.is_empty() {
        return Json(json!({"status": "ready"})).into_response();
    }
    let mut body = json!({"status": "not ready", "connectors": not_ready});
    if !reasons.is_empty() {
        body["reasons"] = Value::Object(reasons);
    }
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

async fn offsets(State(app): State<App>, Path(name): Path<String>) -> Response {
    json_or(app.worker.offsets(&name).await)
}

async fn alter_offsets(State(app): State<App>, Path(name): Path<String>, body: Bytes) -> Response {
    let obj = match json_object(&body) {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let worker = app.worker.clone();
    let altered = detached(async move { worker.alter_offsets(&name, &Value::Object(obj)).await });
    json_or(altered.await.map(|m| json!({ "message": m })))
}

async fn reset_offsets(State(app): State<App>, Path(name): Path<String>) -> Response {
    let worker = app.worker.clone();
    let reset = detached(async move { worker.reset_offsets(&name).await });
    json_or(reset.await.map(|m| json!({ "message": m })))
}

/// `true` for the names Connect accepts for the PostgreSQL connector plugin: its class and
/// its short alias.
fn is_our_plugin(class: &str) -> bool {
    class == CONNECTOR_CLASS || Some(class) == CONNECTOR_CLASS.rsplit('.').next()
}

async fn validate(State(app): State<App>, Path(class): Path<String>, body: Bytes) -> Response {
    let obj = match json_object(&body) {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let given = obj.get(keys::CONNECTOR_CLASS).and_then(Value::as_str);
    if !is_our_plugin(&class) || given.is_some_and(|g| !is_our_plugin(g)) {
        return error(
            400,
            format!(
                "Included connector type {} does not match request type {class}: pgcdc runs {CONNECTOR_CLASS} only",
                given.unwrap_or(CONNECTOR_CLASS)
            ),
        );
    }
    let raw = match raw_config(&obj) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let v = crate::worker::validate_config(&app.worker.effective(&raw));
    let mut groups: Vec<&str> = Vec::new();
    for c in &v.configs {
        if !groups.contains(&c.group) {
            groups.push(c.group);
        }
    }
    let configs: Vec<Value> = v
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "definition": {
                    keys::NAME: c.name, "type": "STRING", "required": c.required,
                    "default_value": null, "importance": "MEDIUM", "documentation": "",
                    "group": c.group, "order_in_group": i, "width": "NONE",
                    "display_name": c.name, "dependents": [],
                },
                "value": {
                    keys::NAME: c.name, "value": c.value, "recommended_values": [],
                    "errors": c.errors, "visible": true,
                },
            })
        })
        .collect();
    Json(json!({
        keys::NAME: CONNECTOR_CLASS,
        "error_count": v.error_count,
        "groups": groups,
        "configs": configs,
    }))
    .into_response()
}
