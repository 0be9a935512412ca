//! embedis: a Redis-compatible server you can run as `embedis-server` or start inside a Rust
//! process.
//!
//! ```
//! let server = embedis::Server::builder().start().expect("server starts");
//! let url = server.url(); // redis://127.0.0.1:<free port>/
//! # assert!(url.starts_with("redis://127.0.0.1:"));
//! // ... point any Redis client at `url` ...
//! drop(server); // stops it
//! ```
//!
//! A test can also read and write the server's data without a client ([`Server::get`],
//! [`Server::set`], [`Server::command`]…), restart it with its data kept ([`Server::restart`]),
//! control its time ([`Server::clock`]), and start several independent servers at once
//! ([`Nodes::start`], five for a Redlock test). [`testing_guide`] shows how to test a lock client
//! with all of this, failure by failure.

#[doc(hidden)]
pub mod bindings;
mod cluster;
mod command_line;
mod direct;
mod nodes;
mod ports;
mod replica_set;

pub use cluster::Cluster;
pub use command_line::{command_line, server_binary};
pub use direct::Reply;
pub use embedis_core::base::config::AppendFsync;
pub use embedis_core::{Clock, Config};
pub use nodes::Nodes;
pub use replica_set::ReplicaSet;

mod faults;
pub use faults::{FaultAction, FaultRule, Faults};

mod tls_certs;
pub use tls_certs::TestCerts;

/// docs/testing.md, the guide for lock-client authors; its Rust examples run as this crate's
/// doctests.
#[doc = include_str!("../docs/testing.md")]
pub mod testing_guide {}

use std::io;
use std::net::SocketAddr;

/// Builds an in-process server. Defaults: a free port on 127.0.0.1, 16 databases, no password,
/// real time, no logging.
pub struct ServerBuilder {
    options: embedis_core::ServerOptions,
    /// TLS test certificates to make at start ([`ServerBuilder::tls_test_certs`]) or given.
    tls: Option<TlsCerts>,
    /// A `dir` was given ([`ServerBuilder::dir`], or `dir` through [`ServerBuilder::config`]).
    dir_given: bool,
}

enum TlsCerts {
    Generate,
    Given(std::sync::Arc<TestCerts>),
}

impl Server {
    /// A builder with the defaults above; [`ServerBuilder::start`] starts the server.
    pub fn builder() -> ServerBuilder {
        let mut options = embedis_core::ServerOptions {
            ephemeral_port: true,
            logger: Some(embedis_core::base::log::Logger::silent()),
            ..Default::default()
        };
        options.config.bind = vec!["127.0.0.1".into()];
        ServerBuilder {
            options,
            tls: None,
            dir_given: false,
        }
    }
}

impl ServerBuilder {
    /// Listens on this port instead of a free one (0 = no TCP listener, as in Redis).
    pub fn port(mut self, port: u16) -> Self {
        self.options.ephemeral_port = false;
        self.options.config.port = port;
        self
    }

    /// Requires clients to AUTH with this password.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.options.config.requirepass = password.into();
        self
    }

    /// Declares an ACL user, as a `user` line of a config file does: `rules` are Redis's ACL
    /// rules separated by spaces. A lock client's test can run as the restricted user its
    /// production deployment has:
    ///
    /// ```
    /// let server = embedis::Server::builder()
    ///     .user("locker", "on >secret ~lock:* +@all")
    ///     .start()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    ///
    /// Rules that do not parse make [`ServerBuilder::start`] fail with Redis's error text.
    pub fn user(mut self, name: &str, rules: &str) -> Self {
        let mut words = vec![name.as_bytes().to_vec()];
        words.extend(rules.split_whitespace().map(|w| w.as_bytes().to_vec()));
        self.options.config.users.push(words);
        self
    }

    /// The number of databases (SELECT 0 … n-1); at least 1.
    pub fn databases(mut self, n: usize) -> Self {
        self.options.config.databases = n.max(1);
        self
    }

    /// Runs the server on this clock (see [`Clock::manual`] to control time in tests).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.options.clock = clock;
        self
    }

    /// Seeds the server's random choices so that runs are reproducible: the random numbers
    /// drawn and the layout of its hash tables both derive from the seed, so the same commands
    /// make the same choices (SPOP, SRANDMEMBER, HRANDFIELD, RANDOMKEY…) on every run. One
    /// caveat: the periodic tick rehashes the keyspace's table in the background for up to a
    /// millisecond of real time, so a RANDOMKEY made while a large keyspace is being resized may
    /// still differ.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = Some(seed);
        self
    }

    /// Sets any configuration parameter by its Redis name, as `CONFIG SET` or a config file would.
    pub fn config(mut self, name: &str, value: &str) -> Result<Self, String> {
        self.options
            .config
            .load_text(&format!(
                "{name} \"{}\"",
                value.replace('\\', "\\\\").replace('"', "\\\"")
            ))
            .map_err(|e| e.reason)?;
        self.dir_given |= name.eq_ignore_ascii_case("dir");
        Ok(self)
    }

    /// Keeps the data on disk in `dir` as Redis does: the RDB file (`dump.rdb`, or the
    /// `dbfilename` parameter) is loaded at start and written by Redis's default `save` points
    /// (`3600 1 300 100 60 10000`), by SAVE / BGSAVE and when the server stops;
    /// [`Server::restart`] then reloads it from disk. `.config("save", "")` (after this call)
    /// leaves saving to SAVE and BGSAVE. The directory must exist.
    pub fn dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        let dir = dir.as_ref();
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.options.config.dir = dir.display().to_string();
        self.options.config.save_points = embedis_core::base::config::DEFAULT_SAVE_POINTS.to_vec();
        self.options.load_at_start = true;
        self.dir_given = true;
        self
    }

    /// Turns the append-only file on or off (`appendonly`), in `dir`'s `appendonlydir` (so call
    /// [`ServerBuilder::dir`] too). With it on, every write is appended before its reply leaves, and a
    /// start or [`Server::restart`] loads the AOF rather than the RDB file, as Redis does.
    pub fn appendonly(mut self, on: bool) -> Self {
        self.options.config.appendonly = on;
        self
    }

    /// When appended writes are forced to the disk (`appendfsync`): before each reply
    /// ([`AppendFsync::Always`]), once a second by a thread ([`AppendFsync::Everysec`], the
    /// default), or when the operating system decides ([`AppendFsync::No`]). A process restart
    /// loses nothing under any of them (the writes were in the file before their replies); they
    /// differ in what a power loss or an operating-system crash could take.
    pub fn appendfsync(mut self, policy: AppendFsync) -> Self {
        self.options.config.appendfsync = policy;
        self
    }

    /// Adds a TLS port (a free one, beside the plain port) serving with certificates made for
    /// the occasion: a new CA, a server certificate and a client certificate ([`TestCerts`],
    /// kept as long as the server). Clients must present a certificate signed by the CA, as
    /// Redis's default `tls-auth-clients yes` asks; `.config("tls-auth-clients", "no")` after
    /// this call lets clients in without one. [`Server::tls_certs`] gives the files and a
    /// ready rustls configuration, [`Server::tls_addr`] the port. `.port(0)` makes the TLS
    /// port the only one.
    pub fn tls_test_certs(mut self) -> Self {
        self.tls = Some(TlsCerts::Generate);
        self
    }

    /// Like [`ServerBuilder::tls_test_certs`], with certificates made beforehand (one CA for
    /// several servers, e.g. a primary and its replica over TLS).
    pub fn tls_certs(mut self, certs: std::sync::Arc<TestCerts>) -> Self {
        self.tls = Some(TlsCerts::Given(certs));
        self
    }

    /// Logs to standard output (Redis's format) instead of staying silent.
    pub fn verbose(mut self) -> Self {
        self.options.logger = None;
        self
    }

    /// Starts the server on its own thread; returns once it is accepting connections.
    pub fn start(mut self) -> io::Result<Server> {
        let certs = match self.tls.take() {
            None => None,
            Some(TlsCerts::Generate) => Some(std::sync::Arc::new(TestCerts::generate()?)),
            Some(TlsCerts::Given(certs)) => Some(certs),
        };
        if let Some(certs) = &certs {
            certs.configure(&mut self.options.config.tls);
            if self.options.config.tls.port == 0 {
                self.options.ephemeral_tls_port = true;
            }
        }
        // Without `dir`, a server keeps nothing on disk of its own accord, but Redis's behaviour
        // still writes files into `dir` (a replica's full sync, SAVE, DEBUG RELOAD): they go to
        // a directory of the server's own, removed with it, never into the caller's current one.
        let scratch = if self.dir_given {
            None
        } else {
            let scratch = ScratchDir::new()?;
            self.options.config.dir = scratch.0.display().to_string();
            Some(scratch)
        };
        let handle = embedis_core::start(self.options.clone())?;
        Ok(Server {
            handle,
            options: Box::new(self.options),
            tls_certs: certs,
            _scratch: scratch,
        })
    }
}

/// A running server. Dropping it shuts it down.
pub struct Server {
    handle: embedis_core::ServerHandle,
    /// What it was started with, to start it again ([`Server::restart`]); boxed because the
    /// configuration is large and a `Server` is moved around.
    options: Box<embedis_core::ServerOptions>,
    /// The certificates of [`ServerBuilder::tls_test_certs`], kept while the server runs.
    tls_certs: Option<std::sync::Arc<TestCerts>>,
    /// The server's own `dir` when the builder was given none; declared last, so that it is
    /// removed after the server has stopped.
    _scratch: Option<ScratchDir>,
}

/// A directory of one server's own under the system's temporary directory, removed on drop.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new() -> io::Result<ScratchDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("embedis-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(ScratchDir(path))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Server {
    /// The address it listens on.
    ///
    /// # Panics
    /// If it has no plain TCP port (`.port(0)`: a TLS-only server, see [`Server::tls_addr`]).
    pub fn addr(&self) -> SocketAddr {
        self.handle
            .addr()
            .expect("a server started by the builder listens on TCP")
    }

    /// The address of the TLS port, if it has one ([`ServerBuilder::tls_test_certs`]).
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.handle.tls_addr()
    }

    /// `rediss://127.0.0.1:<tls port>/`, if it has a TLS port.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_addr().map(|addr| format!("rediss://{addr}/"))
    }

    /// The certificates the server was started with by [`ServerBuilder::tls_test_certs`] or
    /// [`ServerBuilder::tls_certs`].
    pub fn tls_certs(&self) -> Option<&std::sync::Arc<TestCerts>> {
        self.tls_certs.as_ref()
    }

    /// `redis://127.0.0.1:<port>/`, for any client library.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr())
    }

    /// The clock the server runs on.
    pub fn clock(&self) -> &Clock {
        self.handle.clock()
    }

    /// Registers a consumer of the server's write stream — what Redis would write to its AOF
    /// and send its replicas, as RESP commands — and discards what was recorded so far. From
    /// then on [`Server::take_write_stream`] returns what each command propagated. Without a
    /// consumer the server builds no stream at all. [`Server::restart`] starts a server without
    /// one: tap it again.
    ///
    /// # Panics
    /// If the server has stopped.
    pub fn tap_write_stream(&self) {
        self.handle
            .with_engine(|engine| engine.ks.stream.add_consumer())
            .expect("the server is not running");
    }

    /// The write stream's bytes since the last take (see [`Server::tap_write_stream`]): the
    /// commands that propagated, each preceded by `SELECT` when its database is not the last
    /// one's, the effects of a transaction or script wrapped in MULTI/EXEC.
    ///
    /// # Panics
    /// If the server has stopped.
    pub fn take_write_stream(&self) -> Vec<u8> {
        self.handle
            .with_engine(|engine| engine.ks.stream.take().to_vec())
            .expect("the server is not running")
    }

    /// Stops the server and waits until it has.
    pub fn shutdown(mut self) {
        self.handle.shutdown();
    }

    /// Stops the server at once, keeping nothing (crate-internal: [`Cluster::kill`]).
    pub(crate) fn stop(&mut self) {
        let _ = self.handle.stop();
    }

    /// Stops the server and starts it again on the same address with its data kept, as a Redis
    /// process restarted from its RDB file would be: the same keys, values and TTLs (on the same
    /// clock, so a key whose TTL passed meanwhile is gone) and the same function libraries.
    /// Everything else starts afresh: clients are disconnected, statistics reset, CONFIG SET
    /// changes forgotten.
    ///
    /// The ports stay held while the server is down (see `ports`), so that nothing else on the
    /// machine is given them in between (`bind(0)` elsewhere, or a replica's dial taking the
    /// port as its own source). If the new listener still cannot bind (another process bound
    /// that very port on purpose), the error is returned and the server stays stopped, its
    /// data lost.
    pub fn restart(&mut self) -> io::Result<()> {
        let tcp = self.handle.addr();
        let tls = self.handle.tls_addr();
        let data = self.handle.stop();
        let _held: Vec<_> = [tcp, tls]
            .into_iter()
            .flatten()
            .filter_map(|addr| ports::hold_once_closed(addr.port()))
            .collect();
        let mut options = (*self.options).clone();
        // With persistence on, what survives is what the server saved, as for Redis.
        let data = if options.load_at_start { None } else { data };
        if let Some(addr) = tcp {
            options.ephemeral_port = false;
            options.config.port = addr.port();
        }
        if let Some(addr) = tls {
            options.ephemeral_tls_port = false;
            options.config.tls.port = addr.port();
        }
        self.handle = embedis_core::start_with(options, data)?;
        Ok(())
    }
}
