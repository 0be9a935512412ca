//! Serving other clients while a script runs too long.
//!
//! A script runs whole on the executor, so while it runs no other command can. Redis keeps the
//! server responsive anyway: once a script has run for `busy-reply-threshold` milliseconds (5 s
//! by default), the Lua hook lets the event loop turn from inside the script, and every command
//! then gets `-BUSY …` except the few flagged `allow_busy` — SCRIPT KILL / FUNCTION KILL (which
//! stop a script that has not written yet, so that the dataset stays as it was), SHUTDOWN
//! NOSAVE, and connection commands (AUTH, HELLO, QUIT, RESET, MULTI, WATCH…).
//!
//! Here the script's count hook calls [`BusyWatch::check`] (through the script's host). Past the
//! threshold it accepts waiting connections (registering each with the engine and spawning its
//! task, which starts once the script ends — through the [`Acceptor`] the I/O layer installs) and reads,
//! without blocking, the sockets of the clients whose connection task is
//! idle — waiting for input with nothing buffered or half-decoded (see
//! [`ClientHandle::is_idle`]) — and answers each complete request itself, writing the reply to the
//! socket directly (or to the client's outbox when earlier output is still queued). Bytes of a
//! request not yet complete stay with the handle; the task takes them back when the script ends.
//! Only the single-threaded I/O mode has idle tasks to serve this way: with `io-threads` > 1
//! requests wait until the script ends.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{RequestDecoder, Writer};
use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::base::error::Error;
use crate::kernel::call::{call, How, Parts};
use crate::kernel::gates;
use crate::model::client::{ClientHandle, ClientState};
use crate::model::vm_slot::{RunningScript, ScriptKind};

/// Why a busy script must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// SCRIPT KILL / FUNCTION KILL.
    ByUser,
    /// SHUTDOWN while the script ran.
    Shutdown,
}

/// The running script's clock and state, as far as other clients are concerned.
pub struct BusyWatch<'a> {
    started: Instant,
    threshold: Duration,
    kind: ScriptKind,
    /// The script's name for the log (its SHA1 or function name).
    name: &'a str,
    /// The command running the script.
    command: &'a [Bytes],
    /// Libraries and functions loaded, for FUNCTION STATS while a function runs.
    pub function_counts: (usize, usize),
    /// Past the threshold: other clients are being answered.
    busy: bool,
    /// The script called a write command: it can no longer be killed.
    pub wrote: bool,
    pub kill: Option<Kill>,
}

thread_local! {
    /// How a busy script accepts waiting connections on this thread: installed by the I/O layer
    /// that owns the listeners (`crate::io::net`), which registers each new client with the engine
    /// and spawns its task. Without one (unit tests, threaded I/O) nobody new is accepted.
    static ACCEPTOR: Cell<Option<Acceptor>> = const { Cell::new(None) };
}

/// Accepts, without blocking, the connections waiting while a script is busy.
pub type Acceptor = fn(&mut Parts<'_>);

/// Installs the acceptor busy scripts on this thread call (see [`BusyWatch::check`]).
pub fn install_acceptor(acceptor: Acceptor) {
    ACCEPTOR.set(Some(acceptor));
}

/// How a busy script reads and writes the sockets of clients served through io_uring
/// (`crate::io::net_uring`), whose bytes go through the ring rather than `recv`/`send`: installed by
/// that module on the thread of a server that has a ring.
#[derive(Clone, Copy)]
pub struct RingHooks {
    /// Moves the bytes received for `fd` into the handle's stolen bytes; None if `fd` is not a
    /// ring connection.
    pub take_input: fn(fd: i32, handle: &ClientHandle) -> Option<usize>,
    /// Sends `bytes` on `fd` after what it already queued; false if `fd` is not a ring
    /// connection.
    pub send: fn(fd: i32, bytes: &[u8]) -> bool,
}

thread_local! {
    static RING_HOOKS: Cell<Option<RingHooks>> = const { Cell::new(None) };
}

/// Installs the ring's hooks for busy scripts on this thread.
pub fn install_ring_hooks(hooks: RingHooks) {
    RING_HOOKS.set(Some(hooks));
}

/// Most bytes read from one client per turn of the busy loop.
const READ_PER_TURN: usize = 64 * 1024;

impl<'a> BusyWatch<'a> {
    pub fn new(
        kind: ScriptKind,
        name: &'a str,
        command: &'a [Bytes],
        threshold_ms: u64,
    ) -> BusyWatch<'a> {
        BusyWatch {
            started: Instant::now(),
            threshold: Duration::from_millis(threshold_ms),
            kind,
            name,
            command,
            function_counts: (0, 0),
            busy: false,
            wrote: false,
            kill: None,
        }
    }

    /// The command running the script (EVAL's or FCALL's arguments).
    pub fn command(&self) -> &'a [Bytes] {
        self.command
    }

    /// The error the script's caller gets when the script is stopped (Redis words it the same
    /// for functions).
    pub fn kill_line(&self) -> &'static str {
        "ERR Script killed by user with SCRIPT KILL..."
    }

    /// Called from the script's hook: once past the threshold, serves the other clients.
    pub fn check(&mut self, parts: &mut Parts<'_>) {
        if !self.busy {
            if self.started.elapsed() < self.threshold {
                return;
            }
            self.busy = true;
            parts.server.running_script = Some(RunningScript {
                kind: self.kind,
                name: self.name.to_string(),
                command: self.command.to_vec(),
                started: self.started,
                function_counts: self.function_counts,
            });
            parts.server.log.warning(&format!(
                "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the {} command. Script name is: {}.",
                self.started.elapsed().as_millis(),
                match self.kind {
                    ScriptKind::Eval => "SCRIPT KILL",
                    ScriptKind::Function => "FUNCTION KILL",
                },
                self.name
            ));
        }
        // New connections first (the I/O layer's acceptor, if it installed one), so that a
        // client that connects while the script runs is answered too.
        if let Some(accept) = ACCEPTOR.get() {
            accept(parts);
        }
        for id in parts.clients.ids() {
            let Some(mut client) = parts.clients.remove(id) else {
                continue;
            };
            self.serve(parts, &mut client);
            parts.clients.insert(client);
        }
        drop_closed_replicas(parts);
    }

    /// Reads what an idle client sent and answers its complete requests.
    fn serve(&mut self, parts: &mut Parts<'_>, client: &mut Box<ClientState>) {
        let handle = client.handle.clone();
        if !handle.is_idle() || handle.is_blocked() || handle.is_killed() {
            return;
        }
        let read = read_available(client.fd, &handle);
        if read > 0 {
            parts.server.stats.net_input_bytes += read as u64;
            parts.server.stats.total_reads_processed += 1;
        }
        let max_bulk = parts.server.config.proto_max_bulk_len as usize;
        loop {
            let authenticated = handle.is_authenticated();
            let Some(args) = handle.with_stolen(|buf| next_request(buf, max_bulk, authenticated))
            else {
                break;
            };
            let mut out = BytesMut::new();
            self.answer(parts, client, args, &mut out);
            parts.server.stats.net_output_bytes += out.len() as u64;
            send_or_deliver(client.fd, &handle, &out);
            if client.close_after_reply {
                handle.kill();
                break;
            }
        }
        if handle.with_stolen(|buf| !buf.is_empty()) {
            handle.wake();
        }
    }

    /// One request while busy: the gates Redis applies before its busy check, then `-BUSY` or
    /// the command.
    fn answer(
        &mut self,
        parts: &mut Parts<'_>,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
    ) {
        let asker = gates::Asker::Busy(self.kind);
        let now_us = parts.server.clock.now_us();
        let command = match gates::admit(parts, client, &args, asker, now_us, out) {
            gates::Admission::Run(command) => command,
            gates::Admission::Refuse(command, error) => {
                return gates::refuse(parts, client, command, error, &args, out);
            }
            // The busy order neither queues nor postpones.
            gates::Admission::Queue(..) | gates::Admission::Postpone(_) => unreachable!(),
        };
        let kills = match command.full_name.as_str() {
            "script|kill" => Some(ScriptKind::Eval),
            "function|kill" => Some(ScriptKind::Function),
            _ => None,
        };
        if let Some(kind) = kills {
            // A script that wrote is unkillable whichever KILL names it; only then does the
            // wrong KILL get the BUSY text (Redis checks in this order).
            let verdict = if self.wrote {
                Err(Error::msg("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."))
            } else if kind != self.kind {
                Err(gates::busy_error(self.kind))
            } else {
                Ok(())
            };
            match verdict {
                Ok(()) => {
                    self.kill = Some(Kill::ByUser);
                    parts
                        .server
                        .log
                        .warning("Script killed by user with SCRIPT KILL.");
                    parts.server.command_stats[command.id].calls += 1;
                    Writer::new(out, client.resp).ok();
                }
                Err(error) => {
                    parts.server.command_stats[command.id].failed_calls += 1;
                    parts.server.count_error(&error.code());
                    Writer::new(out, client.resp).error_line(&error.line());
                }
            }
            return;
        }
        let version = client.resp;
        call(
            parts,
            client,
            command,
            &args,
            out,
            version,
            now_us,
            How::FRESH,
        );
        if parts.server.shutdown.is_some() {
            self.kill = Some(Kill::Shutdown);
        }
    }
}

/// Forgets the replicas whose peer closed its connection while the script runs, as Redis's
/// event loop frees such a client during a busy script: INFO and the script's own `INFO
/// replication` stop counting them (Redis's suite waits in a script for `connected_slaves:0`).
/// Their connections close once the script ends.
fn drop_closed_replicas(parts: &mut Parts<'_>) {
    let closed: Vec<_> = parts
        .server
        .repl
        .replicas
        .iter()
        .filter(|r| parts.clients.get(r.id).is_some_and(|c| peer_closed(c.fd)))
        .map(|r| r.id)
        .collect();
    for id in closed {
        parts.server.repl.remove(id);
        if let Some(client) = parts.clients.get(id) {
            client.handle.kill();
        }
    }
}

/// True if the peer of `fd` has closed its side (or the socket failed), without reading.
fn peer_closed(fd: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout never blocks.
    let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
    ready > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// The next complete request in `buf`, consumed; None while it is incomplete (its bytes stay
/// for the connection task) or malformed (the task will find the error itself).
fn next_request(buf: &mut BytesMut, max_bulk: usize, authenticated: bool) -> Option<Vec<Bytes>> {
    if buf.is_empty() {
        return None;
    }
    // Decode a copy: the decoder consumes a partial request's pieces, which must stay whole.
    let mut probe = buf.clone();
    let mut decoder = RequestDecoder::new(max_bulk);
    match decoder.decode(&mut probe, authenticated) {
        Ok(Some(args)) => {
            *buf = probe;
            Some(args)
        }
        _ => None,
    }
}

/// Reads what the socket has without blocking, into the handle's stolen bytes.
fn read_available(fd: i32, handle: &ClientHandle) -> usize {
    if let Some(hooks) = RING_HOOKS.get() {
        if let Some(read) = (hooks.take_input)(fd, handle) {
            return read;
        }
    }
    let mut total = 0;
    let mut chunk = [0u8; 16 * 1024];
    while total < READ_PER_TURN {
        // SAFETY: `chunk` is a valid buffer of the given length; MSG_DONTWAIT never blocks.
        let n = unsafe {
            libc::recv(
                fd,
                chunk.as_mut_ptr().cast(),
                chunk.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n <= 0 {
            // Nothing more now, the peer closed (the task will see that itself), or an error.
            break;
        }
        let n = n as usize;
        handle.with_stolen(|buf| buf.extend_from_slice(&chunk[..n]));
        total += n;
    }
    total
}

/// Writes a reply straight to the socket, or queues it behind output still waiting there.
fn send_or_deliver(fd: i32, handle: &ClientHandle, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    if handle.has_outbox() {
        handle.deliver(bytes);
        return;
    }
    if let Some(hooks) = RING_HOOKS.get() {
        if (hooks.send)(fd, bytes) {
            return;
        }
    }
    // SAFETY: `bytes` is a valid buffer; MSG_DONTWAIT never blocks, MSG_NOSIGNAL avoids SIGPIPE.
    let n = unsafe {
        libc::send(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    let sent = if n < 0 { 0 } else { n as usize };
    if sent < bytes.len() {
        handle.deliver(&bytes[sent..]);
    }
}
