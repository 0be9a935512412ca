//! [`Client`]: the multi-connection tests' client (tests/it/server_commands.rs, tests/it/faults.rs,
//! tests/it/blocking.rs). It dereferences to a [`Conn`] (for [`Conn::reply_within`] and
//! [`Conn::read_within`], the bounded waits that check that nothing comes) and adds the reply
//! shapes those tests compare: raw bytes, text, decoded content, or the close of the connection.
//! One version here, so that a fix to how a test reads replies reaches every file.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use embedis_protocol::{decode_value, Value};

use super::{blocked_clients, wait_blocked, Conn, Received};

/// How long the waits that expect nothing (no reply, no close) watch.
pub const QUIET: Duration = Duration::from_millis(150);
/// How long a reply may take before the test fails.
const REPLY_WAIT: Duration = Duration::from_secs(10);

pub struct Client {
    conn: Conn,
    /// The server's address, to open the probe connection of [`Client::block`].
    addr: SocketAddr,
}

impl std::ops::Deref for Client {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl std::ops::DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Client {
            conn: super::connect(addr),
            addr,
        }
    }

    /// Sends a command without reading its reply.
    pub fn send(&mut self, args: &[&str]) {
        super::send(&mut self.conn, args);
    }

    /// The next reply's raw bytes; panics if none comes in time or the connection closed.
    #[track_caller]
    pub fn raw_reply(&mut self) -> Vec<u8> {
        self.reply_within(REPLY_WAIT).expect("a reply within 10 s")
    }

    /// Sends a command and returns its reply's raw bytes.
    #[track_caller]
    pub fn raw(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(args);
        self.raw_reply()
    }

    /// The next reply's raw bytes as text (`+OK\r\n`).
    #[track_caller]
    pub fn reply(&mut self) -> String {
        String::from_utf8_lossy(&self.raw_reply()).into_owned()
    }

    /// Sends a command and returns its reply's raw bytes as text.
    #[track_caller]
    pub fn cmd(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.reply()
    }

    /// The reply's content as text: for bulk, simple and error replies without the framing.
    #[track_caller]
    pub fn text(&mut self, args: &[&str]) -> String {
        let raw = self.raw(args);
        let (value, _) = decode_value(&Bytes::from(raw.clone())).unwrap().unwrap();
        match value {
            Value::Bulk(b) | Value::Simple(b) | Value::Error(b) => {
                String::from_utf8_lossy(&b).into_owned()
            }
            Value::Verbatim { text, .. } => String::from_utf8_lossy(&text).into_owned(),
            _ => String::from_utf8_lossy(&raw).into_owned(),
        }
    }

    /// The next reply as text, or None if the server closed the connection (panics if neither
    /// came in time).
    #[track_caller]
    pub fn reply_or_close(&mut self) -> Option<String> {
        self.text_within(REPLY_WAIT)
            .unwrap_or_else(|| panic!("no reply within 10 s"))
    }

    /// Some(reply, or None for a close) if something came within `wait`; None if nothing did.
    pub fn text_within(&mut self, wait: Duration) -> Option<Option<String>> {
        match self.conn.read_within(wait) {
            Received::Reply { raw, .. } => Some(Some(String::from_utf8_lossy(&raw).into_owned())),
            Received::Closed => Some(None),
            Received::Nothing => None,
        }
    }

    /// This connection's CLIENT ID.
    pub fn id(&mut self) -> u64 {
        let raw = self.raw(&["CLIENT", "ID"]);
        std::str::from_utf8(&raw[1..raw.len() - 2])
            .unwrap()
            .parse()
            .unwrap()
    }

    /// True once the server has closed the connection (within `timeout`).
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self.read_within(Duration::from_millis(50)) {
                Received::Closed => return true,
                Received::Reply { .. } | Received::Nothing => {}
            }
        }
        false
    }

    /// Asserts that no reply comes for a while (a closed connection fails too).
    #[track_caller]
    pub fn no_reply(&mut self) {
        if let Some(raw) = self.reply_within(QUIET) {
            panic!("unexpected reply {}", super::show(&raw));
        }
    }

    /// Asserts that no byte (and no close) arrives for a while.
    #[track_caller]
    pub fn assert_quiet(&mut self, why: &str) {
        if let Some(got) = self.text_within(QUIET) {
            panic!("{why}: expected nothing yet, got {got:?}");
        }
    }

    /// Asserts the server closed the connection without sending anything more.
    #[track_caller]
    pub fn assert_closed(&mut self) {
        assert_eq!(
            self.reply_or_close(),
            None,
            "the connection should be closed"
        );
    }

    /// Sends a blocking command and waits until the server counts one more blocked client.
    #[track_caller]
    pub fn block(&mut self, args: &[&str]) {
        let mut probe = Client::connect(self.addr);
        let before = blocked_clients(&mut probe);
        self.send(args);
        wait_blocked(&mut probe, before + 1);
    }
}
