//! A replica's link to its primary, as Redis 7.0 makes it (`connectWithMaster`,
//! `syncWithMaster`, `readSyncBulkPayload` in replication.c): one task on the engine's thread
//! that connects (from `bind-source-addr` when set), introduces itself (PING, AUTH with
//! `masterauth`, REPLCONF listening-port and capa eof/psync2), asks to continue its history (PSYNC replid offset+1), receives the RDB
//! image of a full sync — `$<len>` or the diskless `$EOF:<mark>` framing, with the newlines a
//! primary sends while it prepares it — and then reads the stream, handing each command to the
//! engine ([`Engine::link_apply`]). It acknowledges its offset every second (REPLCONF ACK),
//! and at once when the primary asks (GETACK). A link that fails or goes silent for
//! `repl-timeout` seconds is retried once a second, continuing with PSYNC where it can.
//!
//! With `tls-replication` the link is a TLS connection made with the current TLS context
//! ([`crate::base::tls::TlsShared::connector`]): its client certificate, and the CA that the
//! primary's certificate must chain to.
//!
//! The task waits while the server is a primary; REPLICAOF wakes it
//! ([`crate::model::replication::Replication::follow`]). The engine is borrowed only between awaits.

use bytes::{Buf, Bytes, BytesMut};
use embedis_protocol::RequestDecoder;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::engine::{Applied, Engine, ImageMode, LinkTarget};
use crate::io::load_pace::LoadPace;
use crate::model::client::{ClientId, Peer};
use crate::model::replication::LinkState;

/// How much the link reads at a time (as a client connection, Redis's 16 KB).
const READ_CHUNK: usize = 16 * 1024;

/// What the link task needs of the event loop it runs on: the engine, and the hand-over of
/// out-of-turn output after each piece of work (the network layer's `Shared` provides both;
/// the trait keeps this file below it).
pub trait EngineCell {
    fn engine(&self) -> std::cell::RefMut<'_, Engine>;
    fn engine_ref(&self) -> std::cell::Ref<'_, Engine>;
    fn after_work(&self, engine: &mut Engine);
}

/// Runs for the server's lifetime: links to the primary whenever there is one.
pub async fn run<S: EngineCell + 'static>(shared: Rc<S>) {
    let wake = shared.engine_ref().server.repl.link_wake.clone();
    loop {
        let target = shared.engine_ref().link_wanted();
        let Some(target) = target else {
            wake.notified().await;
            continue;
        };
        let mut client = None;
        let result = link(&shared, &target, &mut client).await;
        {
            let mut engine = shared.engine();
            if let Err(e) = &result {
                if engine.link_current(target.generation) {
                    engine.server.log.warning(&format!(
                        "Replication link with {}:{}: {e}",
                        target.host, target.port
                    ));
                }
            }
            engine.link_lost(target.generation, client);
            shared.after_work(&mut engine);
        }
        // Redis's replication cron retries once a second; a new REPLICAOF does not wait.
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = wake.notified() => {}
        }
    }
}

/// Redis's words for a primary silent (or unreachable) before it answered PSYNC.
const CONNECT_TIMEOUT: &str = "Timeout connecting to the MASTER...";

fn fail(text: impl Into<String>) -> io::Error {
    io::Error::other(text.into())
}

/// The connection to the primary: plain TCP, or TLS with `tls-replication`.
enum LinkStream {
    Plain(TcpStream),
    Tls(Box<crate::base::tls::TlsStream>),
}

impl AsyncRead for LinkStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            LinkStream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for LinkStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            LinkStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            LinkStream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkStream::Plain(s) => Pin::new(s).poll_flush(cx),
            LinkStream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            LinkStream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// The socket to the primary and what was read from it but not used yet.
struct Conn {
    stream: LinkStream,
    input: BytesMut,
    timeout: Duration,
    /// Until the primary answers PSYNC: a silence then is Redis's "Timeout connecting to the
    /// MASTER..." (a primary delaying a diskless sync sends newlines meanwhile).
    handshake: bool,
    /// True once REPLICAOF no longer wants this link: a read waiting for the primary (its
    /// handshake, a full sync's image) gives up then, as Redis's
    /// `cancelReplicationHandshake` closes the transfer.
    abandoned: Box<dyn Fn() -> bool>,
}

/// How often a read waiting for the primary looks whether the link is still wanted.
const ABANDON_CHECK: Duration = Duration::from_millis(100);

impl Conn {
    async fn send(&mut self, args: &[&str]) -> io::Result<()> {
        let mut out = BytesMut::new();
        crate::model::write_stream::write_multibulk(&mut out, args);
        self.stream.write_all(&out).await?;
        // TLS keeps records a full socket did not take until flushed.
        self.stream.flush().await
    }

    /// Reads more bytes, within the link's timeout, unless the link is abandoned meanwhile.
    async fn fill(&mut self) -> io::Result<()> {
        self.input.reserve(READ_CHUNK);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let n = loop {
            let check =
                tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + ABANDON_CHECK));
            tokio::select! {
                read = self.stream.read_buf(&mut self.input) => break read?,
                _ = check => {
                    if (self.abandoned)() {
                        return Err(fail("REPLICAOF changed during the transfer"));
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(fail(if self.handshake {
                            CONNECT_TIMEOUT
                        } else {
                            "timeout reading from the master"
                        }));
                    }
                }
            }
        };
        if n == 0 {
            return Err(fail("the master closed the connection"));
        }
        Ok(())
    }

    /// One reply line, without its CRLF. Empty lines (a primary's keep-alive newlines) are
    /// returned too, for the caller to skip.
    async fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(pos) = self.input.iter().position(|&b| b == b'\n') {
                let mut line = self.input.split_to(pos + 1);
                line.truncate(pos);
                if line.last() == Some(&b'\r') {
                    line.truncate(pos - 1);
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            self.fill().await?;
        }
    }

    /// The next line that is not a keep-alive newline.
    async fn reply(&mut self) -> io::Result<String> {
        loop {
            let line = self.line().await?;
            if !line.is_empty() {
                return Ok(line);
            }
        }
    }
}

/// Connects to the primary; with `bind-source-addr` from that address first, as Redis's
/// `anetTcpNonBlockBestEffortBindConnect`: an address that cannot be bound (or connected from) is
/// given up for a connection from any address.
async fn connect(target: &LinkTarget) -> io::Result<TcpStream> {
    let addresses = tokio::net::lookup_host((target.host.as_str(), target.port)).await?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the master");
    for address in addresses {
        if !target.source_addr.is_empty() {
            if let Ok(stream) = connect_from(&target.source_addr, address).await {
                return Ok(stream);
            }
        }
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A connection to `to` from the address `source` names (of the same family).
async fn connect_from(source: &str, to: std::net::SocketAddr) -> io::Result<TcpStream> {
    let local = tokio::net::lookup_host((source, 0))
        .await?
        .find(|a| a.is_ipv4() == to.is_ipv4())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no source address"))?;
    let socket = if to.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(local)?;
    socket.connect(to).await
}

async fn link<S: EngineCell + 'static>(
    shared: &Rc<S>,
    target: &LinkTarget,
    client: &mut Option<ClientId>,
) -> io::Result<()> {
    let generation = target.generation;
    let progress = |state: LinkState| -> io::Result<()> {
        if shared.engine().link_progress(generation, state) {
            Ok(())
        } else {
            Err(fail("REPLICAOF changed"))
        }
    };
    progress(LinkState::Connecting)?;
    let timeout = Duration::from_secs(target.timeout_s);
    let stream = tokio::time::timeout(timeout, connect(target))
        .await
        .map_err(|_| fail(CONNECT_TIMEOUT))??;
    let _ = stream.set_nodelay(true);
    let peer = Peer::Tcp {
        addr: stream.peer_addr()?,
        local: stream.local_addr()?,
    };
    let stream = if target.tls {
        let connector = shared.engine_ref().server.tls.connector();
        let Some(connector) = connector else {
            return Err(fail("TLS replication is on but TLS is not configured"));
        };
        let tls = tokio::time::timeout(timeout, connector.connect(stream))
            .await
            .map_err(|_| fail("timeout in the TLS handshake with the master"))?
            .map_err(|e| fail(format!("TLS handshake with the master failed: {e}")))?;
        LinkStream::Tls(Box::new(tls))
    } else {
        LinkStream::Plain(stream)
    };
    shared
        .engine_ref()
        .server
        .log
        .notice("MASTER <-> REPLICA sync started");
    let link = shared.clone();
    let mut conn = Conn {
        stream,
        input: BytesMut::new(),
        timeout,
        handshake: true,
        abandoned: Box::new(move || !link.engine().link_current(generation)),
    };
    progress(LinkState::Handshake)?;
    conn.send(&["PING"]).await?;
    let pong = conn.reply().await?;
    // A primary that wants a password answers NOAUTH (or NOPERM) until AUTH below.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(fail(format!("Error reply to PING from master: '{pong}'")));
    }
    if !target.masterauth.is_empty() {
        if target.masteruser.is_empty() {
            conn.send(&["AUTH", &target.masterauth]).await?;
        } else {
            conn.send(&["AUTH", &target.masteruser, &target.masterauth])
                .await?;
        }
        let reply = conn.reply().await?;
        if reply.starts_with('-') {
            return Err(fail(format!("Unable to AUTH to MASTER: {reply}")));
        }
    }
    let port = target.listening_port.to_string();
    conn.send(&["REPLCONF", "listening-port", &port]).await?;
    conn.reply().await?;
    if !target.announce_ip.is_empty() {
        conn.send(&["REPLCONF", "ip-address", &target.announce_ip])
            .await?;
        conn.reply().await?;
    }
    conn.send(&["REPLCONF", "capa", "eof", "capa", "psync2"])
        .await?;
    conn.reply().await?;
    let from = if target.replid == "?" {
        "-1".to_string()
    } else {
        (target.offset + 1).to_string()
    };
    if target.failover {
        // A FAILOVER hands our role to this primary: it takes it, and continues our history.
        let sent = conn
            .send(&["PSYNC", &target.replid, &from, "FAILOVER"])
            .await;
        if let Err(e) = sent {
            let mut engine = shared.engine();
            engine.link_failover_answered(generation, false, true);
            shared.after_work(&mut engine);
            return Err(e);
        }
    } else {
        conn.send(&["PSYNC", &target.replid, &from]).await?;
    }
    let answer = conn.reply().await?;
    conn.handshake = false;
    if target.failover {
        let accepted = answer.starts_with("+FULLRESYNC") || answer.starts_with("+CONTINUE");
        let mut engine = shared.engine();
        engine.link_failover_answered(generation, accepted, false);
        shared.after_work(&mut engine);
        if !accepted {
            return Err(fail(format!(
                "Unexpected reply to PSYNC from master: {answer}"
            )));
        }
    }
    let id = if let Some(rest) = answer.strip_prefix("+FULLRESYNC ") {
        let mut words = rest.split_whitespace();
        let replid = words.next().unwrap_or_default().to_string();
        let offset: u64 = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| fail(format!("bad FULLRESYNC reply '{answer}'")))?;
        shared
            .engine_ref()
            .server
            .log
            .notice(&format!("Full resync from master: {replid}:{offset}"));
        progress(LinkState::Transfer)?;
        full_sync(shared, &mut conn, generation, replid, offset, peer).await?
    } else if let Some(rest) = answer.strip_prefix("+CONTINUE") {
        let new_id = rest.split_whitespace().next().map(str::to_string);
        let mut engine = shared.engine();
        engine
            .link_continue(generation, new_id, peer)
            .ok_or_else(|| fail("REPLICAOF changed"))?
    } else {
        // -NOMASTERLINK, -LOADING, or a refusal: try again later.
        return Err(fail(format!(
            "Unexpected reply to PSYNC from master: {answer}"
        )));
    };
    *client = Some(id);
    follow(shared, &mut conn, id, generation).await
}

/// A full sync (Redis's `readSyncBulkPayload`): the image is received, then loaded a slice
/// at a time with the event loop's other tasks between the slices (see
/// `crate::engine::replica_full_sync`). Returns the client that applies the stream.
async fn full_sync<S: EngineCell>(
    shared: &Rc<S>,
    conn: &mut Conn,
    generation: u64,
    replid: String,
    offset: u64,
    peer: Peer,
) -> io::Result<ClientId> {
    let (mode, mut pace) = {
        let mut engine = shared.engine();
        let mode = engine.link_image_mode(&replid);
        let delay = engine.server.config.key_load_delay;
        let newest = engine.server.config.compat_version.rdb_version();
        let pace = (mode != ImageMode::Disk)
            .then(|| LoadPace::start(delay, newest))
            .flatten();
        (mode, pace)
    };
    let image = match receive_image(shared, conn, generation, pace.as_mut()).await {
        Ok(image) => image,
        Err(e) => {
            shared.engine().link_image_short_read(mode, &e.to_string());
            return Err(e);
        }
    };
    let paced = pace.is_some();
    drop(pace);
    let mut load = {
        let mut engine = shared.engine();
        let load = engine.link_load_begin(generation, image, mode, paced);
        shared.after_work(&mut engine);
        load.map_err(fail)?
    };
    loop {
        let step = {
            let mut engine = shared.engine();
            let step = engine.link_load_step(generation, &mut load);
            shared.after_work(&mut engine);
            step
        };
        if step.map_err(fail)? {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut engine = shared.engine();
    let id = engine.link_load_finish(generation, load, replid, offset, peer);
    shared.after_work(&mut engine);
    Ok(id)
}

/// Reads the RDB image of a full sync.
async fn receive_image<S: EngineCell>(
    shared: &Rc<S>,
    conn: &mut Conn,
    generation: u64,
    mut pace: Option<&mut LoadPace>,
) -> io::Result<Vec<u8>> {
    // The primary sends newlines while it prepares the image: they only show it is alive.
    let header = loop {
        let line = conn.line().await?;
        if !line.is_empty() {
            break line;
        }
        shared.engine().link_heard();
    };
    if header.starts_with('-') {
        return Err(fail(format!(
            "MASTER aborted replication with an error: {header}"
        )));
    }
    let Some(size) = header.strip_prefix('$') else {
        return Err(fail(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{header}')"
        )));
    };
    if let Some(mark) = size.strip_prefix("EOF:") {
        // Diskless: the image ends with the 40 bytes of the mark.
        let mark = mark.as_bytes().to_vec();
        if mark.len() != 40 {
            return Err(fail("bad EOF mark from the master"));
        }
        let mut image: Vec<u8> = Vec::new();
        loop {
            // The mark may straddle two reads, and the stream may follow it in the same read:
            // look from just before the new bytes, and give back what follows the mark.
            let from = image.len().saturating_sub(mark.len() - 1);
            let before = image.len();
            image.extend_from_slice(&conn.input);
            conn.input.clear();
            if let Some(pace) = pace.as_deref_mut() {
                pace.feed(&image[before..]).await;
            }
            shared
                .engine()
                .link_transfer(generation, -1, image.len() as u64);
            if let Some(at) = image[from..]
                .windows(mark.len())
                .position(|w| w == mark.as_slice())
            {
                let end = from + at;
                conn.input.extend_from_slice(&image[end + mark.len()..]);
                image.truncate(end);
                return Ok(image);
            }
            conn.fill().await?;
        }
    }
    let size: usize = size
        .parse()
        .map_err(|_| fail(format!("bad bulk length from the master: '{header}'")))?;
    shared.engine().link_transfer(generation, size as i64, 0);
    let mut image = Vec::with_capacity(size.min(1 << 30));
    loop {
        let take = conn.input.len().min(size - image.len());
        let before = image.len();
        image.extend_from_slice(&conn.input[..take]);
        conn.input.advance(take);
        if let Some(pace) = pace.as_deref_mut() {
            pace.feed(&image[before..]).await;
        }
        shared
            .engine()
            .link_transfer(generation, size as i64, image.len() as u64);
        if image.len() == size {
            return Ok(image);
        }
        conn.fill().await?;
    }
}

/// Applies the primary's stream until the link ends.
async fn follow<S: EngineCell>(
    shared: &Rc<S>,
    conn: &mut Conn,
    id: ClientId,
    generation: u64,
) -> io::Result<()> {
    let mut decoder = RequestDecoder::new(usize::MAX >> 1);
    // The bytes of the requests being decoded, as received: what the offset counts and what
    // sub-replicas and the backlog get.
    let mut raw = BytesMut::new();
    raw.extend_from_slice(&conn.input);
    let mut ack_timer = tokio::time::interval(Duration::from_secs(1));
    ack_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let wake = shared.engine_ref().server.repl.link_wake.clone();
    let handle = shared
        .engine_ref()
        .clients
        .get(id)
        .map(|c| c.handle.clone())
        .ok_or_else(|| fail("the master's client was closed"))?;
    let mut silent_since = tokio::time::Instant::now();
    loop {
        if handle.is_killed() {
            return Err(fail("the master's client was closed"));
        }
        // Everything complete in the input, in order — unless CLIENT PAUSE holds the
        // primary's client (then the stream waits, as Redis's paused master client does).
        let held = shared.engine_ref().server.faults.replication_held();
        if held {
            // A partition injected by a test: neither read nor acknowledge until it ends (the
            // timeout does not apply: the primary is not silent, we are not listening).
            tokio::time::sleep(Duration::from_millis(5)).await;
            silent_since = tokio::time::Instant::now();
            continue;
        }
        let mut acks = Vec::new();
        if !handle.is_blocked() {
            let mut engine = shared.engine();
            while !handle.is_blocked() {
                let decoded = decoder
                    .decode(&mut conn.input, true)
                    .map_err(|e| fail(format!("protocol error from the master: {e}")))?;
                let Some(args) = decoded else { break };
                let used = raw.len() - conn.input.len();
                let bytes: Bytes = raw.split_to(used).freeze();
                match engine.link_apply(id, args, &bytes) {
                    Applied::Done => {}
                    Applied::AckAsked(offset) => acks.push(offset),
                    Applied::ClientGone => {
                        shared.after_work(&mut engine);
                        return Err(fail("the master's client was closed"));
                    }
                }
            }
            engine.server.repl.unapplied_input = raw.len() as u64;
            shared.after_work(&mut engine);
        }
        // A big command's room goes once it is applied (Redis's clientsCron shrinks its primary
        // client's query buffer): otherwise the buffers that took a 32 MB SET keep 32 MB each
        // (unit/pendingquerybuf compares the replica's used_memory with the primary's).
        give_back_room(&mut conn.input);
        give_back_room(&mut raw);
        for offset in acks {
            send_ack(&mut conn.stream, offset).await?;
        }
        conn.input.reserve(READ_CHUNK);
        let deadline = silent_since + conn.timeout;
        // The acknowledgement of the timer's tick, written after the select: the read borrows
        // the stream while it waits.
        let mut ack = None;
        tokio::select! {
            read = conn.stream.read_buf(&mut conn.input) => {
                let n = read?;
                if n == 0 {
                    return Err(fail("the master closed the connection"));
                }
                let start = conn.input.len() - n;
                raw.extend_from_slice(&conn.input[start..]);
                shared.engine().server.repl.unapplied_input = raw.len() as u64;
                silent_since = tokio::time::Instant::now();
            }
            _ = ack_timer.tick() => {
                ack = Some(shared.engine_ref().link_offset());
            }
            _ = handle.notified() => {}
            _ = wake.notified() => {
                if !shared.engine().link_current(generation) {
                    // The run loop must see the wake-up too, to link to the new primary at once.
                    wake.notify_one();
                    return Err(fail("REPLICAOF changed"));
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(fail("MASTER timeout: no data nor PING received..."));
            }
        }
        if let Some(offset) = ack {
            send_ack(&mut conn.stream, offset).await?;
        }
    }
}

/// Replaces an empty buffer that grew past a megabyte by a new one (a split keeps the whole
/// allocation alive).
fn give_back_room(buffer: &mut BytesMut) {
    if buffer.is_empty() && buffer.capacity() > 1 << 20 {
        *buffer = BytesMut::new();
    }
}

async fn send_ack(write: &mut LinkStream, offset: u64) -> io::Result<()> {
    let mut out = BytesMut::new();
    let offset = offset.to_string();
    crate::model::write_stream::write_multibulk(&mut out, &["REPLCONF", "ACK", &offset]);
    write.write_all(&out).await?;
    write.flush().await
}
