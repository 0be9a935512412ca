//! The in-process API: a server started in one line, five side by side, shutdown and drop.

use crate::support;

use support::Conn;

#[test]
fn five_servers_side_by_side_are_independent() {
    let servers: Vec<embedis::Server> = (0..5)
        .map(|_| support::builder().start().unwrap())
        .collect();
    let mut ports: Vec<u16> = servers.iter().map(|s| s.addr().port()).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 5, "each has its own port");
    for (i, server) in servers.iter().enumerate() {
        let mut c = Conn::connect(server.addr()).unwrap();
        assert_eq!(
            c.command(&["ECHO", &format!("node {i}")]),
            format!("$6\r\nnode {i}\r\n").into_bytes()
        );
        assert!(server.url().starts_with("redis://127.0.0.1:"));
    }
}

#[test]
fn shutdown_and_drop_stop_the_server() {
    let server = support::builder().start().unwrap();
    let addr = server.addr();
    assert!(Conn::connect(addr).is_ok());
    server.shutdown();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "nothing listens after shutdown"
    );

    let server = support::builder().start().unwrap();
    let addr = server.addr();
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "nothing listens after drop"
    );
}

#[test]
fn password_is_required_when_set() {
    let server = support::builder().password("s3cret").start().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        c.command(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
}
