//! What only Kafka's admin API answers, next to the sink: the brokers' request limit and
//! whether they create topics, topic creation, and the topics' cleanup policies (for
//! `pgcdc validate`). Start-up reaches it through [`super::kafka::KafkaSink::admin`]; the sink
//! uses it to create topics on first use and to refuse records over the request limit.
//!
//! Its client takes only the connection and security settings of the producer's (`security.*`,
//! `sasl.*`, `ssl.*`, `client.id`), and logs through the producer's rate-limited client log.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientContext;

use crate::config::KafkaConfig;
use crate::error::{Error, Result};

use super::kafka::{producer_error, ClientLog};

/// Context of the admin client: the same rate-limited logging.
#[derive(Default)]
pub struct AdminContext {
    client_log: Arc<ClientLog>,
}

impl ClientContext for AdminContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.client_log.log(level, fac, log_message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.client_log.error(error, reason);
    }
}

/// `broker_auto_create` when every broker read has `auto.create.topics.enable=false`.
const AUTO_CREATE_OFF: usize = 1;
/// `broker_auto_create` when a broker creates topics on first use.
const AUTO_CREATE_ON: usize = 2;

/// The admin client and what it learned of the brokers.
pub struct KafkaAdmin {
    admin: AdminClient<AdminContext>,
    config: KafkaConfig,
    /// The smallest `socket.request.max.bytes` of the brokers (0: unknown). A broker closes
    /// the connection on a larger request, which librdkafka would retry for ever.
    request_limit: AtomicUsize,
    /// The brokers' `auto.create.topics.enable`: [`AUTO_CREATE_OFF`], on, or unknown.
    broker_auto_create: AtomicUsize,
}

impl KafkaAdmin {
    /// Creates the admin client for `config`, logging to `client_log`. Errors: an invalid
    /// security setting (the message names it). Does not contact the brokers yet.
    pub fn new(config: &KafkaConfig, client_log: Arc<ClientLog>) -> Result<KafkaAdmin> {
        let mut admin_config = ClientConfig::new();
        admin_config.set("bootstrap.servers", &config.bootstrap_servers);
        admin_config.set("client.id", "pgcdc-admin");
        // The admin client only creates topics; its failures come back in the request's
        // result, so its own log lines (which librdkafka would print raw) are switched off.
        admin_config.set_log_level(RDKafkaLogLevel::Emerg);
        for (k, v) in &config.producer {
            if k.starts_with("security.")
                || k.starts_with("sasl.")
                || k.starts_with("ssl.")
                || k == "client.id"
            {
                admin_config.set(k, v);
            }
        }
        let admin = admin_config
            .create_with_context(AdminContext { client_log })
            .map_err(producer_error)?;
        Ok(KafkaAdmin {
            admin,
            config: config.clone(),
            request_limit: AtomicUsize::new(0),
            broker_auto_create: AtomicUsize::new(0),
        })
    }

    /// The smallest `socket.request.max.bytes` of the brokers, in bytes (0: unknown).
    pub fn request_limit(&self) -> usize {
        self.request_limit.load(Ordering::Relaxed)
    }

    /// Reads the brokers' `socket.request.max.bytes` (the smallest) and
    /// `auto.create.topics.enable`, when the principal may describe broker configs; otherwise
    /// they stay unknown and are not checked.
    pub async fn read_broker_configs(&self, brokers: &[i32]) {
        let resources: Vec<ResourceSpecifier<'_>> = brokers
            .iter()
            .take(16)
            .map(|id| ResourceSpecifier::Broker(*id))
            .collect();
        let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
        let Ok(results) = self.admin.describe_configs(&resources, &opts).await else {
            tracing::debug!(
                "cannot describe the brokers' configs; their request limit is not checked"
            );
            return;
        };
        let configs: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        let limit = configs
            .iter()
            .filter_map(|r| r.get("socket.request.max.bytes"))
            .filter_map(|e| e.value.as_deref()?.parse::<usize>().ok())
            .min();
        if let Some(limit) = limit {
            self.request_limit.store(limit, Ordering::Relaxed);
        }
        let auto_create: Vec<bool> = configs
            .iter()
            .filter_map(|r| r.get("auto.create.topics.enable"))
            .filter_map(|e| e.value.as_deref()?.parse::<bool>().ok())
            .collect();
        if !auto_create.is_empty() {
            let state = if auto_create.iter().any(|on| *on) {
                AUTO_CREATE_ON
            } else {
                AUTO_CREATE_OFF
            };
            self.broker_auto_create.store(state, Ordering::Relaxed);
        }
    }

    /// Makes sure `topic` exists: creates it (broker defaults for partitions and replication
    /// unless `topic.creation.default.*` say otherwise) when `topic.creation.enable` is on.
    /// An existing topic is fine. A topic that cannot be created and does not exist is an
    /// error naming it and the fix.
    pub async fn ensure_topic(&self, topic: &str) -> Result<()> {
        if self.config.topic_creation_enable {
            let new = NewTopic::new(
                topic,
                self.config.topic_partitions,
                TopicReplication::Fixed(self.config.topic_replication_factor),
            );
            let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
            match self.admin.create_topics([&new], &opts).await {
                Ok(results) => {
                    for r in results {
                        match r {
                            Ok(_) => tracing::info!(topic, "created topic"),
                            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                            Err((_, code)) => {
                                if !self.topic_exists(topic).await? {
                                    return Err(Error::kafka(format!(
                                        "topic {topic} does not exist and pgcdc could not create it: {code} (create it, allow topic creation for pgcdc's principal, or set topic.creation.default.partitions/replication.factor)"
                                    )));
                                }
                            }
                        }
                    }
                }
                Err(e) => {
                    return Err(Error::connection(format!(
                        "cannot create topic {topic}: Kafka admin request failed"
                    ))
                    .with_source(e))
                }
            }
        } else if !self.topic_exists(topic).await? {
            if self.broker_auto_create.load(Ordering::Relaxed) == AUTO_CREATE_OFF {
                return Err(Error::kafka(format!(
                    "topic {topic} does not exist, topic.creation.enable=false and the brokers do not create topics (auto.create.topics.enable=false): create the topic, or set topic.creation.enable=true (pgcdc then creates it with topic.creation.default.partitions and replication.factor)"
                )));
            }
            tracing::warn!(topic,
                "topic does not exist and topic.creation.enable=false; relying on broker auto-creation");
        }
        Ok(())
    }

    /// For `pgcdc validate`: each topic's `cleanup.policy` (`None` when it does not exist, or
    /// when the principal may not describe it: `Some("")`). Errors: metadata cannot be read.
    pub async fn topic_cleanup_policies(
        &self,
        topics: &[String],
    ) -> Result<Vec<(String, Option<String>)>> {
        // Metadata of every topic: asking for one by name lets a broker with
        // auto.create.topics.enable create it, and a preflight creates nothing.
        let client = self.admin.inner();
        let md =
            tokio::task::block_in_place(|| client.fetch_metadata(None, Duration::from_secs(10)))
                .map_err(|e| {
                    Error::connection("cannot read the topics' metadata").with_source(e)
                })?;
        let existing: HashSet<String> = md
            .topics()
            .iter()
            .filter(|t| t.error().is_none() && !t.partitions().is_empty())
            .map(|t| t.name().to_string())
            .collect();
        let mut out = Vec::new();
        for topic in topics {
            if !existing.contains(topic) {
                out.push((topic.clone(), None));
                continue;
            }
            let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
            let policy = self
                .admin
                .describe_configs(&[ResourceSpecifier::Topic(topic)], &opts)
                .await
                .ok()
                .and_then(|r| r.into_iter().next()?.ok())
                .and_then(|c| c.get("cleanup.policy")?.value.clone())
                .unwrap_or_default();
            out.push((topic.clone(), Some(policy)));
        }
        Ok(out)
    }

    /// `true` when a missing topic would be created: by pgcdc (`topic.creation.enable`) or,
    /// as far as the brokers said at the connection check, by the brokers.
    pub fn creates_topics(&self) -> bool {
        self.config.topic_creation_enable
            || self.broker_auto_create.load(Ordering::Relaxed) == AUTO_CREATE_ON
    }

    async fn topic_exists(&self, topic: &str) -> Result<bool> {
        let client = self.admin.inner();
        let md = tokio::task::block_in_place(|| {
            client.fetch_metadata(Some(topic), Duration::from_secs(10))
        })
        .map_err(|e| {
            Error::connection(format!("cannot read metadata of topic {topic}")).with_source(e)
        })?;
        Ok(md
            .topics()
            .iter()
            .any(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty()))
    }
}
