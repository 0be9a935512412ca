//! What the language packages (`python/`, `nodejs/`) share, so that each keeps only its
//! language's glue: the options every constructor takes, by name ([`Options`]), and who owns
//! the servers ([`Group`]) — one server, `Nodes`, a `ReplicaSet` or a `Cluster` — shared by
//! the objects that show its members. A member is found by its index at each call, so a
//! replica set's primary is the primary of the moment, after a failover too.
//!
//! Errors are plain text ([`Error`]); each package raises them as its language's exception.
//! Not part of the Rust API proper: Rust tests use the builders directly.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use crate::{Clock, Cluster, Nodes, ReplicaSet, Server, ServerBuilder};

/// An error for the package to raise, with the reason (Redis's text where Redis has one).
/// `usage` marks a mistake in the call itself (an unknown option, a value of the wrong kind),
/// which a package raises as its language's argument error (`ValueError`, `TypeError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub text: String,
    pub usage: bool,
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Error {
        Error {
            text: error.to_string(),
            usage: false,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

fn error<T>(text: impl Into<String>) -> Result<T> {
    Err(Error {
        text: text.into(),
        usage: false,
    })
}

fn usage<T>(text: impl Into<String>) -> Result<T> {
    Err(Error {
        text: text.into(),
        usage: true,
    })
}

/// One option's value as the package read it from its language's keyword arguments / object.
pub enum OptionValue {
    Int(i64),
    Bool(bool),
    Text(String),
    /// A dict / object of names to values (`users`, `config`), values as text.
    Pairs(Vec<(String, String)>),
    /// A clock object of the package (shared by every server given it).
    Clock(Clock),
}

/// The options of `Server`, `Nodes`, `ReplicaSet` and `Cluster`, applied to the Rust API's
/// [`ServerBuilder`].
#[derive(Default, Clone)]
pub struct Options {
    port: u16,
    password: Option<String>,
    /// ACL users: name → rules (`"on >secret ~* +@all"`).
    users: Vec<(String, String)>,
    /// Any Redis configuration parameter, as `CONFIG SET` takes it.
    config: Vec<(String, String)>,
    clock: Option<Clock>,
    /// `"manual"`: each server gets a manual clock of its own.
    manual_clocks: bool,
    dir: Option<String>,
    appendonly: bool,
    databases: Option<usize>,
    seed: Option<u64>,
    verbose: bool,
}

impl Options {
    /// Options from `(name, value)` pairs; refuses an unknown name, a value of the wrong kind
    /// and a Redis parameter Redis would refuse, with Redis's error, before any server starts.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, OptionValue)>) -> Result<Options> {
        let mut options = Options::default();
        for (name, value) in pairs {
            options.set(&name, value)?;
        }
        let mut builder = Server::builder();
        for (name, value) in &options.config {
            builder = builder.config(name, value).or_else(error)?;
        }
        Ok(options)
    }

    fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
        use OptionValue as V;
        match (name, value) {
            ("port", V::Int(n)) => {
                self.port = u16::try_from(n).or_else(|_| usage("port is 0..65535"))?
            }
            ("password", V::Text(text)) => self.password = Some(text),
            ("users", V::Pairs(pairs)) => self.users = pairs,
            ("config", V::Pairs(pairs)) => self.config = pairs,
            ("clock", value) => self.set_clock(value)?,
            ("dir", V::Text(text)) => self.dir = Some(text),
            ("appendonly", V::Bool(on)) => self.appendonly = on,
            ("databases", V::Int(n)) => {
                self.databases = Some(usize::try_from(n).or_else(|_| usage("databases >= 1"))?)
            }
            ("seed", V::Int(n)) => self.seed = Some(n as u64),
            ("verbose", V::Bool(on)) => self.verbose = on,
            (
                "port" | "password" | "users" | "config" | "dir" | "appendonly" | "databases"
                | "seed" | "verbose",
                _,
            ) => return usage(format!("option {name:?} has a value of the wrong kind")),
            (other, _) => {
                return usage(format!(
                    "unknown option {other:?} (Redis's parameters go in config)"
                ))
            }
        }
        Ok(())
    }

    /// `clock`: a clock object, `"manual"`, `"controllable"` or `"system"`.
    fn set_clock(&mut self, value: OptionValue) -> Result<()> {
        match value {
            OptionValue::Clock(clock) => self.clock = Some(clock),
            OptionValue::Text(text) if text == "manual" => self.manual_clocks = true,
            OptionValue::Text(text) if text == "controllable" => {
                self.clock = Some(Clock::controllable())
            }
            OptionValue::Text(text) if text == "system" => self.clock = None,
            _ => return usage("clock is a Clock, \"manual\", \"controllable\" or \"system\""),
        }
        Ok(())
    }

    /// One clock for a whole cluster: the given one, or a new manual one for `"manual"`.
    fn shared_clock(&self) -> Option<Clock> {
        match (&self.clock, self.manual_clocks) {
            (Some(clock), _) => Some(clock.clone()),
            (None, true) => Some(Clock::manual()),
            (None, false) => None,
        }
    }

    /// The builder with these options (every Redis parameter was checked by `from_pairs`).
    pub fn apply(&self, mut builder: ServerBuilder) -> ServerBuilder {
        if self.port != 0 {
            builder = builder.port(self.port);
        }
        if let Some(password) = &self.password {
            builder = builder.password(password.clone());
        }
        for (name, rules) in &self.users {
            builder = builder.user(name, rules);
        }
        if let Some(clock) = &self.clock {
            builder = builder.clock(clock.clone());
        } else if self.manual_clocks {
            builder = builder.clock(Clock::manual());
        }
        if let Some(dir) = &self.dir {
            builder = builder.dir(dir);
        }
        if self.appendonly {
            builder = builder.appendonly(true);
        }
        if let Some(n) = self.databases {
            builder = builder.databases(n);
        }
        if let Some(seed) = self.seed {
            builder = builder.seed(seed);
        }
        if self.verbose {
            builder = builder.verbose();
        }
        for (name, value) in &self.config {
            builder = builder
                .config(name, value)
                .unwrap_or_else(|e| unreachable!("checked by Options::from_pairs: {e}"));
        }
        builder
    }

    /// Starts one server (blocks until it listens).
    pub fn start_server(&self) -> Result<std::sync::Arc<Group>> {
        Ok(Group::new(Members::One(
            self.apply(Server::builder()).start()?,
        )))
    }

    /// Starts `n` independent servers.
    pub fn start_nodes(&self, n: usize) -> Result<std::sync::Arc<Group>> {
        let nodes = Nodes::start_with(n, |_, builder| self.apply(builder))?;
        Ok(Group::new(Members::Nodes(nodes)))
    }

    /// Starts a primary and `replicas` replicas, linked.
    pub fn start_replica_set(&self, replicas: usize) -> Result<std::sync::Arc<Group>> {
        let set = ReplicaSet::start_with(replicas, |_, builder| self.apply(builder))?;
        Ok(Group::new(Members::Replicas(set)))
    }

    /// Starts a cluster; with a clock option every node runs on one clock.
    pub fn start_cluster(&self, shards: usize, replicas: usize) -> Result<std::sync::Arc<Group>> {
        let clock = self.shared_clock();
        let options = Options {
            clock: None,
            manual_clocks: false,
            ..self.clone()
        };
        let apply = |_: usize, builder: ServerBuilder| options.apply(builder);
        let cluster = match clock {
            Some(clock) => Cluster::start_on_clock(shards, replicas, clock, apply)?,
            None => Cluster::start_with(shards, replicas, apply)?,
        };
        Ok(Group::new(Members::Cluster(cluster)))
    }
}

/// The servers of a group, while it runs.
pub enum Members {
    One(Server),
    Nodes(Nodes),
    /// Index 0 is the primary, 1.. the replicas.
    Replicas(ReplicaSet),
    Cluster(Cluster),
}

/// A group of servers shared by the package's objects; stopped once, by whichever asks first.
pub struct Group {
    members: Mutex<Option<Members>>,
    /// Cluster nodes stopped by `kill`: their views answer an error instead of panicking.
    killed: Mutex<HashSet<usize>>,
}

/// A lock whose holder panicked is still usable: the group's state is a plain value.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Group {
    pub fn new(members: Members) -> std::sync::Arc<Group> {
        std::sync::Arc::new(Group {
            members: Mutex::new(Some(members)),
            killed: Mutex::new(HashSet::new()),
        })
    }

    /// Runs `f` on the whole group; an error once it has stopped.
    pub fn with<T>(&self, f: impl FnOnce(&mut Members) -> T) -> Result<T> {
        match lock(&self.members).as_mut() {
            Some(members) => Ok(f(members)),
            None => error("the server has stopped"),
        }
    }

    /// Runs `f` on member `index`.
    pub fn with_server<T>(&self, index: usize, f: impl FnOnce(&Server) -> T) -> Result<T> {
        if lock(&self.killed).contains(&index) {
            return error("the node was killed");
        }
        self.with(|members| match members {
            Members::One(server) => Some(f(server)),
            Members::Nodes(nodes) => nodes.iter().nth(index).map(f),
            Members::Replicas(set) => match index {
                0 => Some(f(set.primary())),
                i => set.replicas().get(i - 1).map(f),
            },
            Members::Cluster(cluster) => cluster.nodes().get(index).map(f),
        })?
        .map_or_else(|| error(format!("no server {index} in this group")), Ok)
    }

    /// Runs `f` on the group's `Nodes` (an error for another kind of group).
    pub fn with_nodes<T>(&self, f: impl FnOnce(&mut Nodes) -> T) -> Result<T> {
        self.with(|m| match m {
            Members::Nodes(nodes) => Ok(f(nodes)),
            _ => error("not a Nodes group"),
        })?
    }

    /// Runs `f` on the group's `ReplicaSet`.
    pub fn with_replica_set<T>(&self, f: impl FnOnce(&mut ReplicaSet) -> T) -> Result<T> {
        self.with(|m| match m {
            Members::Replicas(set) => Ok(f(set)),
            _ => error("not a ReplicaSet group"),
        })?
    }

    /// Runs `f` on the group's `Cluster`.
    pub fn with_cluster<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> Result<T> {
        self.with(|m| match m {
            Members::Cluster(cluster) => Ok(f(cluster)),
            _ => error("not a Cluster group"),
        })?
    }

    /// How many members it has now.
    pub fn size(&self) -> Result<usize> {
        self.with(|members| match members {
            Members::One(_) => 1,
            Members::Nodes(nodes) => nodes.len(),
            Members::Replicas(set) => 1 + set.replicas().len(),
            Members::Cluster(cluster) => cluster.nodes().len(),
        })
    }

    /// Restarts a lone server (`Server::restart`); a member of a group cannot.
    pub fn restart(&self) -> Result<()> {
        self.with(|m| match m {
            Members::One(server) => server.restart().map_err(Error::from),
            _ => error("a member of a group restarts with its group"),
        })?
    }

    /// Promotes replica `to` of a replica set (see `ReplicaSet::fail_over`).
    pub fn fail_over_replica_set(&self, to: usize) -> Result<()> {
        self.with_replica_set(|set| {
            if to < set.replicas().len() {
                set.fail_over(to);
                Ok(())
            } else {
                error(format!("no replica {to}"))
            }
        })?
    }

    /// Stops cluster node `index` as SIGKILL would (see `Cluster::kill`).
    pub fn kill(&self, index: usize) -> Result<()> {
        self.with_cluster(|c| {
            if index < c.nodes().len() {
                c.kill(index);
                Ok(())
            } else {
                error(format!("no node {index} in this cluster"))
            }
        })??;
        lock(&self.killed).insert(index);
        Ok(())
    }

    /// Moves a cluster's shared clock on (see `Cluster::advance_clock`).
    pub fn advance_cluster_clock(&self, by: std::time::Duration) -> Result<()> {
        self.with_cluster(|c| {
            if c.nodes()
                .first()
                .is_some_and(|n| n.clock().is_controllable())
            {
                c.advance_clock(by);
                Ok(())
            } else {
                error("advance_clock needs a cluster started with a clock")
            }
        })?
    }

    /// Stops every member (nothing if stopped already). Blocks until they have stopped.
    pub fn stop(&self) {
        let members = lock(&self.members).take();
        match members {
            Some(Members::One(server)) => server.shutdown(),
            Some(Members::Nodes(nodes)) => nodes.shutdown(),
            Some(Members::Replicas(set)) => drop(set),
            Some(Members::Cluster(cluster)) => cluster.shutdown(),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: Vec<(&str, OptionValue)>) -> Result<Options> {
        Options::from_pairs(pairs.into_iter().map(|(k, v)| (k.to_string(), v)))
    }

    fn refused(pairs: Vec<(&str, OptionValue)>) -> Error {
        match options(pairs) {
            Err(e) => e,
            Ok(_) => panic!("options accepted"),
        }
    }

    #[test]
    fn options_refuse_unknown_names_wrong_kinds_and_what_redis_refuses() {
        let unknown = refused(vec![("colour", OptionValue::Bool(true))]);
        assert!(unknown.usage && unknown.text.contains("unknown option \"colour\""));
        let wrong = refused(vec![("port", OptionValue::Text("x".into()))]);
        assert!(wrong.usage && wrong.text.contains("wrong kind"));
        let redis = refused(vec![(
            "config",
            OptionValue::Pairs(vec![("maxmemory-policy".into(), "sometimes".into())]),
        )]);
        assert!(
            !redis.usage && redis.text.contains("must be one of"),
            "{redis}"
        );
    }

    #[test]
    fn a_group_answers_for_its_members_until_it_stops() {
        let group = options(vec![("clock", OptionValue::Text("manual".into()))])
            .unwrap()
            .start_nodes(2)
            .unwrap();
        assert_eq!(group.size(), Ok(2));
        let before = group.with_server(1, |s| s.clock().now_ms()).unwrap();
        group
            .with_nodes(|n| n.advance(std::time::Duration::from_secs(5)))
            .unwrap();
        assert_eq!(
            group.with_server(1, |s| s.clock().now_ms()).unwrap(),
            before + 5000
        );
        assert!(group.with_server(2, |_| ()).is_err());
        assert!(group.restart().unwrap_err().text.contains("with its group"));
        assert!(group.with_cluster(|_| ()).is_err());
        group.stop();
        assert_eq!(group.size(), error("the server has stopped"));
    }
}
