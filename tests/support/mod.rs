//! Helpers shared by the integration tests: a real redis-server to compare against, a minimal
//! synchronous RESP connection that returns replies as raw bytes, and the skip-or-fail policy
//! for tests that need Redis's own binaries. [`locks`] holds the lock clients of the failure
//! stories (tests/lock_failures.rs).

#![allow(dead_code)]

pub mod locks;

use bytes::{Bytes, BytesMut};
use embedis_protocol::{decode_value, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when the environment demands the Redis binaries (CI sets EMBEDIS_REQUIRE_REDIS=1).
pub fn redis_required() -> bool {
    std::env::var("EMBEDIS_REQUIRE_REDIS").is_ok_and(|v| v == "1")
}

/// Finds `binary` on PATH; when missing, either panics (if required) or prints a loud skip
/// message and returns None.
pub fn find_binary(binary: &str, test: &str) -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(binary))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => Some(path.display().to_string()),
        None if redis_required() => {
            panic!("{test}: {binary} not found but EMBEDIS_REQUIRE_REDIS=1")
        }
        None => {
            eprintln!("\n!!!!! SKIPPED {test}: {binary} is not installed (apt-get install redis-server redis-tools) !!!!!\n");
            None
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server child process, killed on drop.
///
/// Each runs in a fresh directory of its own, removed on drop: redis-server loads a `dump.rdb`
/// it finds in its directory at start-up, and a shared one (the temp dir) may hold anybody's.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts redis-server with no persistence on a free port; None if it is not installed.
    ///
    /// The port is picked by binding and releasing it, so another test may grab the same one
    /// before redis-server binds it (an embedis started at the same moment, or another
    /// redis-server). The server that answers is therefore checked to be the process started
    /// here (INFO's process_id), and the start is retried on a new port otherwise.
    pub fn start(test: &str, extra: &[&str]) -> Option<RedisServer> {
        let binary = find_binary("redis-server", test)?;
        let password = extra
            .iter()
            .position(|a| *a == "--requirepass")
            .and_then(|i| extra.get(i + 1))
            .copied();
        for _attempt in 0..10 {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("embedis-test-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create redis-server's directory");
            let mut args: Vec<String> = vec![
                "--port".into(),
                port.to_string(),
                "--bind".into(),
                "127.0.0.1".into(),
                "--save".into(),
                "".into(),
                "--appendonly".into(),
                "no".into(),
                "--daemonize".into(),
                "no".into(),
                "--logfile".into(),
                "".into(),
                "--loglevel".into(),
                "warning".into(),
                "--dir".into(),
                dir.display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            let child = Command::new(&binary)
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut server = RedisServer { child, port, dir };
            if server.wait_until_serving(password) {
                return Some(server);
            }
            // Dropping `server` kills the child if it is still running.
        }
        panic!("{test}: redis-server did not start (10 attempts)");
    }

    /// Waits until this process answers on its port; false if it exited (port taken) or another
    /// process answers there.
    fn wait_until_serving(&mut self, password: Option<&str>) -> bool {
        let pid = format!("process_id:{}\r\n", self.child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            // Another process may hold the port for a moment and reset the connection: a failed
            // probe means "not serving yet", never a test failure.
            let probe = std::panic::catch_unwind(|| {
                let mut c = Conn::connect(self.addr()).ok()?;
                if let Some(password) = password {
                    c.command(&["AUTH", password]);
                }
                Some(c.command(&["INFO", "server"]))
            });
            if let Ok(Some(reply)) = probe {
                if reply.starts_with(b"$") || reply.starts_with(b"=") {
                    return String::from_utf8_lossy(&reply).contains(&pid);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A blocking RESP connection that returns each reply's raw bytes.
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: BytesMut::new(),
        })
    }

    /// Encodes `args` as a RESP array of bulk strings.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends a command and returns the raw bytes of its reply.
    pub fn command<S: AsRef<[u8]>>(&mut self, args: &[S]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
        self.send_raw(&Self::encode(&args));
        self.read_reply().map(|(raw, _)| raw).unwrap_or_default()
    }

    /// Reads one whole reply: its raw bytes and decoded value. None if the peer closed.
    pub fn read_reply(&mut self) -> Option<(Vec<u8>, Value)> {
        loop {
            let frozen = Bytes::copy_from_slice(&self.buf);
            if let Some((value, used)) = decode_value(&frozen).expect("valid RESP from server") {
                let raw = self.buf.split_to(used).to_vec();
                return Some((raw, value));
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// Reads until the peer closes; returns everything received.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let mut all = self.buf.split().to_vec();
        let _ = self.stream.read_to_end(&mut all);
        all
    }
}

/// Escapes bytes for readable assertion messages.
pub fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// A reply's strings, nested arrays, maps and pushes flattened in order (doubles and integers as
/// their decimal text), so that RESP2 and RESP3 shapes of the same data compare alike.
pub fn flat(value: &Value) -> Vec<String> {
    match value {
        Value::Simple(s) | Value::Bulk(s) | Value::Error(s) => {
            vec![String::from_utf8_lossy(s).into_owned()]
        }
        Value::Integer(n) => vec![n.to_string()],
        Value::Double(d) => vec![d.to_string()],
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            items.iter().flat_map(flat).collect()
        }
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| flat(k).into_iter().chain(flat(v)))
            .collect(),
        other => vec![format!("{other:?}")],
    }
}

/// The Python interpreter for the tests that drive Python clients: `$EMBEDIS_PYTHON` if set,
/// else `python3`, if it can import every one of `packages`. Otherwise the test `test` skips
/// loudly, or fails when the environment demands everything (EMBEDIS_REQUIRE_REDIS=1, as CI,
/// which installs them, sets).
pub fn python_with(packages: &[&str], test: &str) -> Option<String> {
    let python = std::env::var("EMBEDIS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&python)
        .args(["-c", &format!("import {}", packages.join(", "))])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(python);
    }
    let message = format!(
        "{python} with the {} packages is needed",
        packages.join(" and ")
    );
    if redis_required() {
        panic!("{test}: {message} (EMBEDIS_REQUIRE_REDIS is set)");
    }
    eprintln!("\n!!!!! SKIPPED {test}: {message} !!!!!\n");
    None
}
