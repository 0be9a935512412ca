//! What the server-level fuzz targets share: a fresh engine on a manual clock with one
//! connected client, and a pass that reads (and then changes) every key the fuzzed input left
//! in the keyspace. A payload or file that decodes without an error but breaks a value's
//! invariants (an unsorted intset, a listpack whose lengths lie, a stream whose IDs go
//! backwards) does no harm until a command walks it, so the targets do not stop at the load.

use bytes::{Bytes, BytesMut};
use embedis_core::model::client::{ClientId, Peer};
use embedis_core::base::clock::Clock;
use embedis_core::base::config::{Access, Config};
use embedis_core::engine::Engine;
use embedis_core::base::log::Logger;

pub struct Fixture {
    pub engine: Engine,
    pub id: ClientId,
}

impl Fixture {
    #[allow(dead_code)] // not every target uses the default configuration
    pub fn new() -> Fixture {
        let mut config = Config::default();
        // DEBUG DIGEST-VALUE and DEBUG OBJECT walk a value as a whole.
        config.enable_debug_command = Access::Yes;
        Fixture::with_config(config)
    }

    pub fn with_config(config: Config) -> Fixture {
        let mut engine = Engine::new(config, Clock::manual(), Logger::silent(), Some(7));
        let addr = "127.0.0.1:40000".parse().unwrap();
        let local = "127.0.0.1:6379".parse().unwrap();
        let id = engine
            .connect(Peer::Tcp { addr, local }, -1)
            .expect("the first client is accepted")
            .id;
        Fixture { engine, id }
    }

    /// Runs one command and returns its reply bytes.
    pub fn run(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let mut out = BytesMut::new();
        self.engine.execute(self.id, args, &mut out);
        out.to_vec()
    }

    /// Reads every key of every database whole, then changes it, the way clients would.
    pub fn exercise_keys(&mut self) {
        let databases = self.engine.server.config.databases.min(16);
        for db in 0..databases {
            self.run(&[b"SELECT", db.to_string().as_bytes()]);
            let keys = self.run(&[b"KEYS", b"*"]);
            for key in bulk_strings(&keys).into_iter().take(32) {
                self.exercise(&key);
            }
        }
        self.run(&[b"SELECT", b"0"]);
    }

    fn exercise(&mut self, key: &[u8]) {
        for cmd in [
            &[&b"DEBUG"[..], b"DIGEST-VALUE", key][..],
            &[b"DEBUG", b"OBJECT", key],
            &[b"OBJECT", b"ENCODING", key],
            &[b"MEMORY", b"USAGE", key],
            &[b"DUMP", key],
        ] {
            self.run(cmd);
        }
        let kind = self.run(&[b"TYPE", key]);
        let reads: &[&[&[u8]]] = match kind.as_slice() {
            b"+string\r\n" => &[
                &[b"GET", key],
                &[b"PFCOUNT", key],
                &[b"PFADD", key, b"a", b"b"],
                &[b"BITCOUNT", key],
                &[b"APPEND", key, b"tail"],
            ],
            b"+list\r\n" => &[
                &[b"LRANGE", key, b"0", b"-1"],
                &[b"LINDEX", key, b"-1"],
                &[b"LINSERT", key, b"BEFORE", b"a", b"b"],
                &[b"RPUSH", key, b"x", b"12345"],
                &[b"LPOP", key, b"3"],
                &[b"LTRIM", key, b"1", b"-2"],
            ],
            b"+set\r\n" => &[
                &[b"SMEMBERS", key],
                &[b"SISMEMBER", key, b"1"],
                &[b"SRANDMEMBER", key, b"-5"],
                &[b"SADD", key, b"7", b"member"],
                &[b"SPOP", key, b"2"],
            ],
            b"+zset\r\n" => &[
                &[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"],
                &[b"ZRANGEBYLEX", key, b"-", b"+"],
                &[b"ZRANK", key, b"a"],
                &[b"ZADD", key, b"1.5", b"a", b"-3", b"b"],
                &[b"ZREMRANGEBYRANK", key, b"0", b"1"],
                &[b"ZRANDMEMBER", key, b"-5", b"WITHSCORES"],
            ],
            b"+hash\r\n" => &[
                &[b"HGETALL", key],
                &[b"HRANDFIELD", key, b"-5", b"WITHVALUES"],
                &[b"HTTL", key, b"FIELDS", b"1", b"a"],
                &[b"HSET", key, b"a", b"1", b"field", b"value"],
                &[b"HDEL", key, b"b"],
            ],
            b"+stream\r\n" => &[
                &[b"XRANGE", key, b"-", b"+"],
                &[b"XREVRANGE", key, b"+", b"-", b"COUNT", b"3"],
                &[b"XINFO", b"STREAM", key, b"FULL"],
                &[b"XINFO", b"GROUPS", key],
                &[b"XADD", key, b"*", b"f", b"v"],
                &[b"XTRIM", key, b"MAXLEN", b"2"],
                &[b"XAUTOCLAIM", key, b"g", b"c", b"0", b"0-0"],
            ],
            b"+vectorset\r\n" => {
                self.exercise_vector_set(key);
                &[]
            }
            _ => &[],
        };
        for cmd in reads {
            self.run(cmd);
        }
        self.run(&[b"DEBUG", b"DIGEST-VALUE", key]);
        self.run(&[b"DUMP", key]);
    }
}

impl Fixture {
    /// Every vector set command on `key`, around an element VRANDMEMBER picks: searches walk
    /// the graph from its entry point, VLINKS reads a node's links, VREM unlinks the node and
    /// repairs its neighbours, VADD links a new node in.
    fn exercise_vector_set(&mut self, key: &[u8]) {
        for cmd in [
            &[&b"VCARD"[..], key][..],
            &[b"VDIM", key],
            &[b"VINFO", key],
            &[b"VRANDMEMBER", key, b"-7"],
        ] {
            self.run(cmd);
        }
        let picked = self.run(&[b"VRANDMEMBER", key]);
        let element = bulk_strings(&[&b"*1\r\n"[..], &picked].concat())
            .pop()
            .unwrap_or_default();
        let e = element.as_slice();
        for cmd in [
            &[&b"VSIM"[..], key, b"ELE", e, b"WITHSCORES", b"WITHATTRIBS", b"COUNT", b"50"][..],
            &[b"VSIM", key, b"ELE", e, b"TRUTH", b"FILTER", b".i > 1"],
            &[b"VEMB", key, e, b"RAW"],
            &[b"VLINKS", key, e, b"WITHSCORES"],
            &[b"VGETATTR", key, e],
            &[b"VSETATTR", key, e, b"{\"i\":3}"],
            &[b"VREM", key, e],
            &[b"VSIM", key, b"VALUES", b"1", b"0.5"],
            &[b"VADD", key, b"VALUES", b"1", b"0.5", b"new"],
            &[b"VADD", key, b"VALUES", b"2", b"0.5", b"-1", b"new2"],
            &[b"VSIM", key, b"ELE", b"new2", b"EF", b"500"],
            &[b"VISMEMBER", key, b"new2"],
        ] {
            self.run(cmd);
        }
    }
}

/// The bulk strings of an array reply (KEYS's), without a full RESP decoder.
fn bulk_strings(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = reply;
    // Skip the array header.
    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
        return out;
    };
    rest = &rest[end + 2..];
    while let Some(stripped) = rest.strip_prefix(b"$") {
        let Some(end) = stripped.windows(2).position(|w| w == b"\r\n") else {
            break;
        };
        let Some(len) = std::str::from_utf8(&stripped[..end])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            break;
        };
        let body = &stripped[end + 2..];
        if body.len() < len + 2 {
            break;
        }
        out.push(body[..len].to_vec());
        rest = &body[len + 2..];
    }
    out
}
