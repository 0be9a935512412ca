//! TCP listening sockets: binding them with Redis's conventions, and replacing them while the
//! server runs (CONFIG SET port / bind).
//!
//! Binding happens synchronously on plain `std` sockets — at start-up, and inside CONFIG SET so
//! that the command can answer Redis's error when an address is taken — and the networking layer
//! turns them into tokio listeners. [`ListenerControl`] hands a new set to the networking layer,
//! which stops accepting on the old sockets and starts on the new ones; open connections are not
//! affected, as in Redis. The old sockets stop listening before [`ListenerControl::replace`]
//! returns, as Redis closes them inside CONFIG SET: the networking layer drops them only when its
//! task next runs, and a CONFIG SET right after (`tls-port 0`, then `port` on the same number)
//! must find the port free.

use socket2::{Domain, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use tokio::sync::mpsc::UnboundedSender;

/// Binds listeners for the `bind` addresses on `port` (0 with `ephemeral` = let the OS pick a
/// port for the first address and use it for the rest). Redis's conventions: `*` is every IPv4
/// address, `::*` every IPv6 one, and a leading `-` marks an address that may be unavailable.
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
        let ip: IpAddr = match addr {
            "*" => IpAddr::from([0, 0, 0, 0]),
            "::*" => IpAddr::from([0u16; 8]),
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
        let pick_port = ephemeral && listeners.is_empty();
        match listen(
            SocketAddr::new(ip, if pick_port { 0 } else { port }),
            backlog,
        ) {
            Ok(listener) => {
                if pick_port {
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
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // As Redis does, so that `*` and `::*` can both be bound.
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(backlog.clamp(1, i32::MAX as u32) as i32)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// One accepted TCP connection, ready to serve: no Nagle delay, keepalive as `tcp-keepalive`
/// says at this moment (`keepalive` is asked after the accept, so CONFIG SET reaches the next
/// connection), and its descriptor and both addresses. Accept errors (out of descriptors, a
/// connection reset before it was taken) are waited out, as Redis's accept handler logs and
/// goes on. Every TCP listener of the networking layers, plain or TLS, accepts through here.
pub async fn accept_tcp(
    listener: &tokio::net::TcpListener,
    keepalive: impl Fn() -> u64,
) -> (tokio::net::TcpStream, i32, SocketAddr, SocketAddr) {
    use std::os::fd::AsRawFd;
    loop {
        let Ok((stream, addr)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        set_keepalive(&stream, keepalive());
        let fd = stream.as_raw_fd();
        let local = stream.local_addr().unwrap_or(addr);
        return (stream, fd, addr, local);
    }
}

/// Turns on TCP keepalive with Redis's meaning of `tcp-keepalive` (seconds of idleness).
pub fn set_keepalive(stream: &tokio::net::TcpStream, seconds: u64) {
    if seconds == 0 {
        return;
    }
    let idle = std::time::Duration::from_secs(seconds);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval((idle / 3).max(std::time::Duration::from_secs(1)))
        .with_retries(3);
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
}

/// The networking layer's inbox for a new set of TCP listeners, and a duplicate descriptor of
/// each current one, to stop it listening at once when it is replaced.
#[derive(Clone)]
pub struct ListenerControl {
    sender: UnboundedSender<Vec<TcpListener>>,
    current: std::sync::Arc<parking_lot::Mutex<Vec<std::os::fd::OwnedFd>>>,
}

impl ListenerControl {
    /// The control of the networking layer that `sender` reaches, which starts with `initial`.
    pub fn new(sender: UnboundedSender<Vec<TcpListener>>, initial: &[TcpListener]) -> Self {
        ListenerControl {
            sender,
            current: std::sync::Arc::new(parking_lot::Mutex::new(duplicates(initial))),
        }
    }

    /// Replaces the listeners the server accepts on; the old ones no longer listen on return.
    pub fn replace(&self, listeners: Vec<TcpListener>) {
        let next = duplicates(&listeners);
        for old in std::mem::replace(&mut *self.current.lock(), next) {
            // A listening socket shut down leaves the listening state (its pending accepts fail)
            // while the networking layer still holds it; the port can then be bound again.
            // SAFETY: `old` is an open descriptor of our own.
            unsafe { libc::shutdown(std::os::fd::AsRawFd::as_raw_fd(&old), libc::SHUT_RDWR) };
        }
        let _ = self.sender.send(listeners);
    }
}

/// A descriptor of each listener's socket of our own (the socket stays open as long as it is).
fn duplicates(listeners: &[TcpListener]) -> Vec<std::os::fd::OwnedFd> {
    listeners
        .iter()
        .filter_map(|l| std::os::fd::AsFd::as_fd(l).try_clone_to_owned().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ephemeral_port_is_shared_and_optional_addresses_may_fail() {
        let listeners = bind_tcp(&["127.0.0.1".into(), "-192.0.2.1".into()], 0, true, 16).unwrap();
        assert_eq!(
            listeners.len(),
            1,
            "the unavailable optional address is skipped"
        );
        assert_ne!(listeners[0].local_addr().unwrap().port(), 0);
    }

    #[test]
    fn a_replaced_listener_frees_its_port_at_once() {
        let (sender, _inbox) = tokio::sync::mpsc::unbounded_channel();
        let old = bind_tcp(&["127.0.0.1".into()], 0, true, 16).unwrap();
        let port = old[0].local_addr().unwrap().port();
        let control = ListenerControl::new(sender, &old);
        assert!(bind_tcp(&["127.0.0.1".into()], port, false, 16).is_err());
        control.replace(Vec::new());
        // `old` is still open, as in the networking layer until its task next runs.
        assert!(bind_tcp(&["127.0.0.1".into()], port, false, 16).is_ok());
        drop(old);
    }

    #[test]
    fn a_taken_port_is_an_error() {
        let taken = bind_tcp(&["127.0.0.1".into()], 0, true, 16).unwrap();
        let port = taken[0].local_addr().unwrap().port();
        let err = bind_tcp(&["127.0.0.1".into()], port, false, 16).unwrap_err();
        assert!(
            err.to_string()
                .contains("Could not create server TCP listening socket"),
            "{err}"
        );
        assert!(bind_tcp(&["nonsense".into()], port, false, 16).is_err());
    }
}
