//! Behaviour that changed in Redis 7.2 and 7.4 (bits, clients, streams, propagation): each test
//! asks embedis as the newer version and as 7.0, which must keep Redis 7.0.15's answer. The
//! expected replies are those of the real servers (Redis 7.4.1 and 7.0.15).

use crate::support;
use support::Client;

/// Runs `check` against embedis as each version named.
fn as_versions(versions: &[&str], mut check: impl FnMut(&str, &mut Client)) {
    for version in versions {
        let server = support::builder_as(version).start().unwrap();
        let mut c = Client::connect(server.addr());
        check(version, &mut c);
    }
}

#[test]
fn bitcount_and_bitpos_check_their_arguments_before_the_key_from_7_2() {
    as_versions(&["7.0", "7.2", "7.4"], |version, c| {
        let new = version != "7.0";
        let syntax = if new {
            "-ERR syntax error\r\n"
        } else {
            ":0\r\n"
        };
        let integer = if new {
            "-ERR value is not an integer or out of range\r\n"
        } else {
            ":0\r\n"
        };
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0"]), syntax, "{version}");
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0", "1", "bat"]), syntax);
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "a", "b"]), integer);
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "1", "a", "b"]), syntax);
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "a"]), integer);
        // Valid arguments on a missing key answer as before.
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0", "1", "bit"]), ":0\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "0", "5"]), ":0\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "1", "0", "5", "bit"]), ":-1\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0"]), ":0\r\n");
    });
}
