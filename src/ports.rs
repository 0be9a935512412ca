//! Holding a TCP port that nothing listens on, so that no other socket of this machine takes
//! it meanwhile: a killed cluster node's ports (what dials them is refused, as by a dead
//! process) and a restarting server's ports (between the old listener's close and the new
//! one's bind, another test's server or an outgoing connection could otherwise be given the
//! port — even a replica dialling it, which then connects to itself).
//!
//! A socket bound with `SO_REUSEADDR` and not listening does both: the kernel neither hands
//! its port to `bind(0)` nor uses it as a connection's source port, and a server's own
//! listener (bound with `SO_REUSEADDR` too) can still bind and listen on it.

/// A socket bound to `port` on 127.0.0.1 without listening, or None if the port is taken.
pub(crate) fn hold(port: u16) -> Option<socket2::Socket> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    socket.set_reuse_address(true).ok()?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    socket.bind(&addr.into()).ok()?;
    Some(socket)
}

/// [`hold`], waiting up to two seconds for the port's old listener to close: a stopped
/// server's listener is dropped on its own runtime, which may be a moment after `stop`
/// returns, and while it still listens nothing else can bind the port (a restart then failed
/// with `AddrInUse` on a loaded machine).
pub(crate) fn hold_once_closed(port: u16) -> Option<socket2::Socket> {
    for _ in 0..200 {
        if let Some(socket) = hold(port) {
            return Some(socket);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::hold;

    #[test]
    fn a_held_port_refuses_connections_yet_a_server_listener_binds_beside_it() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let held = hold(port).expect("the port was just freed");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        let listener =
            embedis_core::base::listeners::bind_tcp(&["127.0.0.1".into()], port, false, 16)
                .expect("a reusing listener binds beside the held socket");
        assert_eq!(listener[0].local_addr().unwrap().port(), port);
        drop(held);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    }
}
