//! Redis Cluster's bus format (the `embedis-bus` crate) against a real redis-server 7.0 node:
//! a MEET written by the crate is taken by Redis (it answers and lists the sender in handshake),
//! and Redis's PONG, with its hostname extension, reads back field by field.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use embedis_bus::{decode, encode, frame_len, kind, node_flag, Body, Extension, Header, Message};

use crate::support::{self, text, Conn, RedisServer};

/// Reads one whole frame from a bus connection.
fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    let mut prefix = [0u8; 8];
    stream
        .read_exact(&mut prefix)
        .expect("a frame's first 8 bytes");
    let len = frame_len(&prefix).expect("a valid signature and length");
    let mut frame = prefix.to_vec();
    frame.resize(len, 0);
    stream
        .read_exact(&mut frame[8..])
        .expect("the rest of the frame");
    frame
}

#[test]
fn a_redis_node_takes_our_meet_and_its_pong_reads_back() {
    let bus_port = support::free_port();
    let extra = [
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus_port.to_string(),
        "--cluster-announce-hostname",
        "redis-node-1",
    ];
    let Some(redis) = RedisServer::start("a_redis_node_takes_our_meet", &extra) else {
        return;
    };
    let mut conn = Conn::connect(redis.addr()).unwrap();
    let redis_id = text(&mut conn, &["CLUSTER", "MYID"]);
    let redis_id = redis_id
        .trim_start_matches('$')
        .split("\r\n")
        .nth(1)
        .unwrap()
        .to_string();

    let our_name = *b"e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0";
    let mut header = Header::new(kind::MEET, our_name);
    (header.port, header.cport, header.flags) = (7001, 17001, node_flag::PRIMARY);
    let meet = Message {
        header,
        body: Body::Ping {
            gossip: vec![],
            extensions: vec![Extension::Hostname(b"embedis-node".to_vec())],
        },
    };
    let mut bus = TcpStream::connect(("127.0.0.1", bus_port)).unwrap();
    bus.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    bus.write_all(&encode(&meet)).unwrap();

    let pong = decode(&read_frame(&mut bus)).expect("Redis's answer is a valid message");
    let h = &pong.header;
    assert_eq!(h.kind, kind::PONG);
    assert_eq!(std::str::from_utf8(&h.sender).unwrap(), redis_id);
    assert_eq!(h.port, redis.port);
    assert_eq!(h.cport, bus_port);
    assert_eq!(
        h.flags & (node_flag::MYSELF | node_flag::PRIMARY),
        node_flag::MYSELF | node_flag::PRIMARY
    );
    assert_eq!(h.slots.count(), 0, "no slots assigned yet");
    assert_eq!(h.replica_of, [0; 40]);
    match &pong.body {
        Body::Ping { extensions, .. } => {
            assert_eq!(extensions, &[Extension::Hostname(b"redis-node-1".to_vec())]);
        }
        other => panic!("a PONG's body: {other:?}"),
    }

    // Redis took the MEET: the sender is a node in handshake, at the ports it announced.
    let nodes = text(&mut conn, &["CLUSTER", "NODES"]);
    let ours = nodes
        .lines()
        .find(|line| line.contains("handshake"))
        .unwrap_or_else(|| panic!("no node in handshake:\n{nodes}"));
    assert!(ours.contains("127.0.0.1:7001@17001"), "{ours}");
}
