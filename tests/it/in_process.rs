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

/// A server given no `dir` writes what Redis writes into `dir` (here a replica's full sync) into
/// a directory of its own under the system's temporary directory, never into the current one,
/// and that directory goes with the server.
#[test]
fn without_a_dir_a_server_writes_into_its_own_scratch_directory() {
    use std::time::Duration;
    let dir_of = |server: &embedis::Server| match server.command(&["CONFIG", "GET", "dir"]) {
        embedis::Reply::Map(pairs) => match &pairs[0].1 {
            embedis::Reply::Bulk(dir) => {
                std::path::PathBuf::from(String::from_utf8_lossy(dir).into_owned())
            }
            other => panic!("CONFIG GET dir: {other:?}"),
        },
        other => panic!("CONFIG GET dir: {other:?}"),
    };
    let mut set = embedis::ReplicaSet::start(1).unwrap();
    set.primary().set("k", "v");
    assert!(set.wait_for_replicas(Duration::from_secs(10)));
    let replica_dir = dir_of(set.replica(0));
    assert!(
        replica_dir.starts_with(std::env::temp_dir()),
        "{replica_dir:?}"
    );
    assert_ne!(replica_dir, std::env::current_dir().unwrap());
    assert_ne!(
        replica_dir,
        dir_of(set.primary()),
        "each server has its own"
    );
    assert!(replica_dir.is_dir());
    // What made a doc test leave a dump.rdb in the repository: the replica saves the image.
    assert!(
        replica_dir.join("dump.rdb").is_file(),
        "the full sync is saved in dir"
    );
    set.fail_over(0);
    drop(set);
    assert!(!replica_dir.exists(), "removed with its server");
}
