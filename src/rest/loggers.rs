//! Log levels changed at run time: Kafka Connect's `GET`/`PUT /admin/loggers`.
//!
//! Logger names: `root` is the default level; `io.debezium` and the names under it stand for
//! pgcdc's own logs (target `pgcdc`), so a Debezium user's `PUT /admin/loggers/io.debezium`
//! does what it did; any other name is taken as a log target, with `.` read as `::`
//! (`pgcdc.pipeline` is `pgcdc::pipeline`). The levels set here are kept in memory only, as
//! Connect keeps them (a restart goes back to `PGCDC_LOG`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::{error, App};

/// Applies a filter directive string (`info,pgcdc::pipeline=debug`); errors are shown to the
/// caller.
pub type ApplyFilter = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// The process's log levels.
#[derive(Clone)]
pub struct Loggers {
    inner: Arc<Inner>,
}

struct Inner {
    /// The default level at start-up (`info`).
    root: String,
    /// The start-up directives other than the default level.
    base: Vec<String>,
    /// Levels set over REST: logger name → (level, when, ms since the Unix epoch).
    set: Mutex<BTreeMap<String, (String, i64)>>,
    apply: Box<ApplyFilter>,
}

/// Connect's level names, and the tracing level each one means.
const LEVELS: &[(&str, &str)] = &[
    ("TRACE", "trace"),
    ("DEBUG", "debug"),
    ("INFO", "info"),
    ("WARN", "warn"),
    ("ERROR", "error"),
    ("FATAL", "error"),
    ("OFF", "off"),
];

impl Loggers {
    /// Levels that start from `directives` (as `PGCDC_LOG` gives them) and change through
    /// `apply`.
    pub fn new(directives: &str, apply: Box<ApplyFilter>) -> Loggers {
        let (root, base): (Vec<&str>, Vec<&str>) = directives
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .partition(|d| !d.contains('='));
        Loggers {
            inner: Arc::new(Inner {
                root: root.last().copied().unwrap_or("info").to_ascii_uppercase(),
                base: base.into_iter().map(str::to_string).collect(),
                set: Mutex::new(BTreeMap::new()),
                apply,
            }),
        }
    }

    /// Levels that cannot change (a library user who set up logging itself).
    pub fn fixed() -> Loggers {
        Loggers::new(
            "info",
            Box::new(|_| Err("log levels are not adjustable in this process".to_string())),
        )
    }

    fn set_levels(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (String, i64)>> {
        self.inner.set.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every logger with a level: `root`, then those set over REST.
    fn levels(&self) -> Map<String, Value> {
        let set = self.set_levels();
        let mut out = Map::new();
        let root = set
            .get("root")
            .map_or((self.inner.root.clone(), None), |(l, t)| {
                (l.clone(), Some(*t))
            });
        out.insert(
            "root".into(),
            json!({"level": root.0, "last_modified": root.1}),
        );
        for (name, (level, at)) in set.iter().filter(|(n, _)| *n != "root") {
            out.insert(name.clone(), json!({"level": level, "last_modified": at}));
        }
        out
    }

    /// Sets `logger` to `level` (Connect's name). Returns the loggers changed.
    fn set(&self, logger: &str, level: &str) -> Result<Vec<String>, String> {
        let upper = level.to_ascii_uppercase();
        if !LEVELS.iter().any(|(n, _)| *n == upper) {
            return Err(format!(
                "Invalid log level '{level}'. Valid log levels are: TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"
            ));
        }
        let now = crate::util::unix_micros() / 1000;
        let mut set = self.set_levels();
        let before = set.insert(logger.to_string(), (upper, now));
        let directives = self.directives(&set);
        if let Err(e) = (self.inner.apply)(&directives) {
            match before {
                Some(b) => set.insert(logger.to_string(), b),
                None => set.remove(logger),
            };
            return Err(e);
        }
        tracing::info!(logger, level, "log level changed");
        Ok(vec![logger.to_string()])
    }

    /// The filter directives for the levels in `set`.
    fn directives(&self, set: &BTreeMap<String, (String, i64)>) -> String {
        let level = |l: &str| {
            LEVELS
                .iter()
                .find(|(n, _)| *n == l)
                .map_or("info", |(_, t)| *t)
        };
        let root = set
            .get("root")
            .map_or(self.inner.root.as_str(), |(l, _)| l.as_str());
        let mut parts = vec![level(&root.to_ascii_uppercase()).to_string()];
        parts.extend(self.inner.base.iter().cloned());
        for (name, (l, _)) in set.iter().filter(|(n, _)| *n != "root") {
            parts.push(format!("{}={}", target(name), level(l)));
        }
        parts.join(",")
    }
}

/// The log target a Connect logger name stands for.
fn target(logger: &str) -> String {
    if logger == "io.debezium" || logger.starts_with("io.debezium.") {
        "pgcdc".to_string()
    } else {
        logger.replace('.', "::")
    }
}

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/admin/loggers", get(all))
        .route("/admin/loggers/{logger}", get(one).put(put))
}

async fn all(State(app): State<App>) -> Json<Value> {
    Json(Value::Object(app.loggers.levels()))
}

async fn one(State(app): State<App>, Path(logger): Path<String>) -> Response {
    match app.loggers.levels().remove(&logger) {
        Some(v) => Json(v).into_response(),
        None => error(404, format!("Logger {logger} not found.")),
    }
}

async fn put(State(app): State<App>, Path(logger): Path<String>, body: Bytes) -> Response {
    let level = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("level").and_then(Value::as_str).map(str::to_string));
    let Some(level) = level else {
        return error(400, "The request body must be {\"level\": \"<LEVEL>\"}");
    };
    match app.loggers.set(&logger, &level) {
        Ok(changed) => Json(json!(changed)).into_response(),
        Err(e) => error(400, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_set_over_rest_becomes_a_directive_and_a_refused_one_is_undone() {
        let applied = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = applied.clone();
        let loggers = Loggers::new(
            "info,rdkafka::producer=error",
            Box::new(move |d| {
                seen.lock().unwrap().push(d.to_string());
                Ok(())
            }),
        );
        assert_eq!(loggers.levels()["root"]["level"], "INFO");
        loggers.set("io.debezium", "debug").unwrap();
        loggers.set("root", "WARN").unwrap();
        assert_eq!(
            applied.lock().unwrap().last().unwrap(),
            "warn,rdkafka::producer=error,pgcdc=debug"
        );
        assert!(loggers
            .set("x", "LOUD")
            .unwrap_err()
            .contains("Invalid log level"));
        let fixed = Loggers::fixed();
        assert!(fixed.set("root", "DEBUG").is_err());
        assert_eq!(fixed.levels()["root"]["last_modified"], Value::Null);
    }
}
