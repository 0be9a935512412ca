//! Networking: listeners, one task per connection, the timer, and shutdown — all on the thread
//! that owns the [`Engine`].
//!
//! Connection I/O runs on the executor's own thread (a tokio current-thread runtime): a task
//! reads what the socket has, decodes every complete request, runs each one directly against the
//! engine, and writes all the replies with one write. There is no hand-over between threads on
//! the data path — no channel, no wake-up of another thread, no lock — which is what makes the
//! CPU cost per request comparable to Redis's own event loop. We measured the alternative
//! (`io-threads` > 1: parsing and socket I/O on a pool of threads, commands handed to a dedicated
//! executor thread in batches) on the 2-core benchmark machine: the cross-thread wake-ups cost
//! more CPU per request than they save; see BENCHMARKS.md. `io-threads` therefore defaults to 1.
//!
//! Each connection's task keeps its requests in order: it stops feeding a client's requests while
//! the client is blocked and resumes when the engine releases it, and it writes out-of-turn output
//! (delivered to the client's [`ClientHandle`]) before the replies of newer requests.

use bytes::BytesMut;
use embedis_protocol::RequestDecoder;
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, UnixListener};
use tokio::sync::Notify;

use crate::client::{ClientHandle, Peer};
use crate::engine::{Engine, Outcome, Refusal};

/// Requests run per turn before the task writes what it has and lets other connections run.
const REQUESTS_PER_TURN: usize = 1024;
/// Replies buffered before the task writes them even if more requests are waiting.
const OUTPUT_PER_TURN: usize = 1024 * 1024;

/// What the tasks of one server share (all on one thread).
pub struct Shared {
    pub engine: RefCell<Engine>,
    /// Wakes the timer task (clock changed, pause or block deadlines changed).
    pub timer: Arc<Notify>,
    /// Set when the server must stop.
    pub shutdown: Arc<Notify>,
}

impl Shared {
    /// Called after anything ran against the engine: hands out-of-turn output to connections and
    /// notices a SHUTDOWN request.
    pub fn after_work(&self, engine: &mut Engine) {
        engine.flush_pending();
        if engine.server.shutdown.is_some() {
            self.shutdown.notify_one();
        }
        // A new blocked client or pause may need the timer earlier than its next tick.
        if std::mem::take(&mut engine.server.timers_changed) {
            self.timer.notify_one();
        }
    }
}

/// Binds the TCP listeners for `bind` addresses on `port` (0 with `ephemeral` = let the OS pick
/// one port, then use it for every address). Redis's conventions: `*` is every IPv4 address, `::*`
/// every IPv6 one, and a leading `-` marks an address that may be unavailable.
pub fn bind_tcp(
    bind: &[String],
    port: u16,
    ephemeral: bool,
    backlog: u32,
) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    let mut port = port;
    for raw in bind {
        let (optional, addr) = match raw.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, raw.as_str()),
        };
        let ip: std::net::IpAddr = match addr {
            "*" => "0.0.0.0".parse().expect("valid"),
            "::*" => "::".parse().expect("valid"),
            other => match other.parse() {
                Ok(ip) => ip,
                Err(_) if optional => continue,
                Err(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("Invalid bind address '{other}'"),
                    ))
                }
            },
        };
        let socket_addr = SocketAddr::new(
            ip,
            if ephemeral && listeners.is_empty() {
                0
            } else {
                port
            },
        );
        match listen(socket_addr, backlog) {
            Ok(listener) => {
                if ephemeral && listeners.is_empty() {
                    port = listener.local_addr()?.port();
                }
                listeners.push(listener);
            }
            Err(_) if optional => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("Could not create server TCP listening socket {addr}:{port}: {e}"),
                ))
            }
        }
    }
    Ok(listeners)
}

fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    if addr.is_ipv6() {
        set_v6_only(&socket);
    }
    socket.bind(addr)?;
    socket.listen(backlog.max(1))
}

/// Redis binds IPv6 addresses with IPV6_V6ONLY so that `*` and `::*` can coexist.
fn set_v6_only(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a valid, owned socket fd with a pointer to a local int.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            &on as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Turns on TCP keepalive with Redis's interval semantics (`tcp-keepalive` seconds).
fn set_keepalive(fd: i32, seconds: u64) {
    if seconds == 0 {
        return;
    }
    let on: libc::c_int = 1;
    let idle = seconds.min(i32::MAX as u64) as libc::c_int;
    let interval = (idle / 3).max(1);
    let count: libc::c_int = 3;
    // SAFETY: setsockopt on a valid connected socket fd with pointers to local ints.
    unsafe {
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            &on as *const _ as *const _,
            size,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPIDLE,
            &idle as *const _ as *const _,
            size,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPINTVL,
            &interval as *const _ as *const _,
            size,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPCNT,
            &count as *const _ as *const _,
            size,
        );
    }
}

/// Accepts TCP connections forever.
pub async fn accept_tcp(listener: TcpListener, shared: Rc<Shared>) {
    use std::os::fd::AsRawFd;
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let fd = stream.as_raw_fd();
        set_keepalive(fd, shared.engine.borrow().server.config.tcp_keepalive);
        let local = stream.local_addr().unwrap_or(addr);
        let peer = Peer::Tcp { addr, local };
        tokio::task::spawn_local(serve_connection(stream, shared.clone(), peer, fd));
    }
}

/// Accepts unix-socket connections forever.
pub async fn accept_unix(listener: UnixListener, path: String, shared: Rc<Shared>) {
    use std::os::fd::AsRawFd;
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let fd = stream.as_raw_fd();
        let peer = Peer::Unix { path: path.clone() };
        tokio::task::spawn_local(serve_connection(stream, shared.clone(), peer, fd));
    }
}

/// Serves one connection until it closes.
pub async fn serve_connection<S>(mut stream: S, shared: Rc<Shared>, peer: Peer, fd: i32)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let connected = shared.engine.borrow_mut().connect(peer, fd);
    let handle = match connected {
        Ok(handle) => handle,
        Err(Refusal::Reply(line)) => {
            let _ = stream.write_all(line.as_bytes()).await;
            return;
        }
    };
    let _ = run_connection(&mut stream, &shared, &handle).await;
    let mut engine = shared.engine.borrow_mut();
    engine.disconnect(handle.id);
    shared.after_work(&mut engine);
}

async fn run_connection<S>(
    stream: &mut S,
    shared: &Shared,
    handle: &Arc<ClientHandle>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let id = handle.id;
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut output = BytesMut::with_capacity(16 * 1024);
    let (max_bulk, query_limit) = {
        let engine = shared.engine.borrow();
        let c = &engine.server.config;
        (
            c.proto_max_bulk_len as usize,
            c.client_query_buffer_limit as usize,
        )
    };
    let mut decoder = RequestDecoder::new(max_bulk);
    let mut closing = false;
    loop {
        let mut more_waiting = false;
        if !handle.is_blocked() && !handle.is_killed() {
            let mut engine = shared.engine.borrow_mut();
            // Output delivered out of turn comes before the replies of newer requests.
            if handle.has_outbox() {
                output.extend_from_slice(&handle.take_outbox());
            }
            decoder.set_max_bulk_len(engine.server.config.proto_max_bulk_len as usize);
            let mut ran = 0;
            loop {
                let authenticated = handle.is_authenticated();
                match decoder.decode(&mut input, authenticated) {
                    Ok(Some(args)) => {
                        ran += 1;
                        match engine.execute(id, args, &mut output) {
                            Outcome::Continue => {}
                            Outcome::Blocked => break,
                            Outcome::Close => {
                                closing = true;
                                break;
                            }
                        }
                        if ran >= REQUESTS_PER_TURN || output.len() >= OUTPUT_PER_TURN {
                            more_waiting = !input.is_empty();
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(error) => {
                        engine
                            .server
                            .log
                            .verbose(&format!("Protocol error ({error}) from client: id={id}"));
                        engine.server.count_error("ERR");
                        output.extend_from_slice(&error.to_resp());
                        closing = true;
                        break;
                    }
                }
            }
            shared.after_work(&mut engine);
        }
        if handle.has_outbox() {
            output.extend_from_slice(&handle.take_outbox());
        }
        if !output.is_empty() {
            stream.write_all(&output).await?;
            shared.engine.borrow_mut().count_output(output.len());
            output.clear();
        }
        if closing || handle.is_killed() {
            let _ = stream.flush().await;
            return Ok(());
        }
        if more_waiting {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            read = stream.read_buf(&mut input) => {
                let n = read?;
                if n == 0 {
                    return Ok(());
                }
                if input.len() > query_limit {
                    let mut engine = shared.engine.borrow_mut();
                    engine.server.stats.client_qbuf_limit_disconnections += 1;
                    engine.server.log.warning("Closing client that reached max query buffer length");
                    return Ok(());
                }
                shared.engine.borrow_mut().count_input(id, n, input.len());
            }
            _ = handle.notified() => {}
        }
    }
}
