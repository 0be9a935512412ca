//! Writing and reading [`Message`]s: the byte layout of Redis 7.0's `clusterMsg` (offsets as
//! `cluster.h` asserts them) and the length checks of its `clusterProcessPacket`.

use crate::{
    kind, message_flag, Body, Extension, Gossip, Header, Message, Slots, EXT_HOSTNAME, GOSSIP_LEN,
    HEADER_LEN, IP_LEN, NAME_LEN, SIGNATURE, SLOTS, VERSION,
};

/// Why the first 8 bytes of a frame are refused (Redis then closes the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadFrame {
    Signature,
    /// The total length is below the header's.
    Length(u32),
}

/// Why a whole message is ignored, as Redis ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Shorter than a header, or not as long as its length field says.
    Truncated,
    Signature,
    Version(u16),
    /// The length field does not match what the type and counts require.
    Length {
        total: u32,
        expected: u64,
    },
    /// An extension whose length is not a multiple of 8, runs past the message, or (a length
    /// Redis would truncate to 16 bits) is too long.
    Extension,
}

/// The length of the frame whose first 8 bytes are `prefix`: Redis reads those first and drops
/// the link on a wrong signature or a length below the header's.
pub fn frame_len(prefix: &[u8; 8]) -> Result<usize, BadFrame> {
    if &prefix[..4] != SIGNATURE {
        return Err(BadFrame::Signature);
    }
    let total = u32::from_be_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
    if (total as usize) < HEADER_LEN {
        return Err(BadFrame::Length(total));
    }
    Ok(total as usize)
}

// ---------------------------------------------------------------------------------------------
// Writing

/// The message's bytes, as Redis writes them: total length, gossip count and extension count
/// from the body, `EXT_DATA` set when there are extensions.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 256);
    let (count, extensions) = match &message.body {
        Body::Ping { gossip, extensions } => (gossip.len() as u16, extensions.len() as u16),
        _ => (0, 0),
    };
    write_header(&mut out, &message.header, count, extensions);
    write_body(&mut out, &message.body);
    let total = (out.len() as u32).to_be_bytes();
    out[4..8].copy_from_slice(&total);
    out
}

fn write_header(out: &mut Vec<u8>, h: &Header, count: u16, extensions: u16) {
    out.extend_from_slice(SIGNATURE);
    out.extend_from_slice(&[0; 4]); // the total length, written last
    for field in [VERSION, h.port, h.kind, count] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    for field in [h.current_epoch, h.config_epoch, h.offset] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    out.extend_from_slice(&h.sender);
    out.extend_from_slice(&h.slots.0[..]);
    out.extend_from_slice(&h.replica_of);
    out.extend_from_slice(&h.ip);
    out.extend_from_slice(&extensions.to_be_bytes());
    out.extend_from_slice(&[0; 30]);
    for field in [h.pport, h.cport, h.flags] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    out.push(h.state);
    let mut mflags = h.mflags;
    if extensions > 0 {
        mflags[0] |= message_flag::EXT_DATA;
    }
    out.extend_from_slice(&mflags);
    debug_assert_eq!(out.len(), HEADER_LEN);
}

fn write_body(out: &mut Vec<u8>, body: &Body) {
    match body {
        Body::Ping { gossip, extensions } => {
            gossip.iter().for_each(|g| write_gossip(out, g));
            extensions.iter().for_each(|e| write_extension(out, e));
        }
        Body::Fail { about } => out.extend_from_slice(about),
        Body::Publish { channel, message } => {
            out.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            out.extend_from_slice(&(message.len() as u32).to_be_bytes());
            out.extend_from_slice(channel);
            out.extend_from_slice(message);
            // Redis sizes the body as the struct's 8-byte placeholder plus the data, less 8:
            // nothing more.
        }
        Body::Empty => {}
        Body::Update {
            config_epoch,
            name,
            slots,
        } => {
            out.extend_from_slice(&config_epoch.to_be_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&slots.0[..]);
        }
        Body::Module {
            module_id,
            kind,
            payload,
        } => {
            out.extend_from_slice(module_id);
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            out.push(*kind);
            out.extend_from_slice(payload);
        }
        Body::Unknown(bytes) => out.extend_from_slice(bytes),
    }
}

fn write_gossip(out: &mut Vec<u8>, g: &Gossip) {
    out.extend_from_slice(&g.name);
    out.extend_from_slice(&g.ping_sent.to_be_bytes());
    out.extend_from_slice(&g.pong_received.to_be_bytes());
    out.extend_from_slice(&g.ip);
    for field in [g.port, g.cport, g.flags, g.pport, 0] {
        out.extend_from_slice(&field.to_be_bytes());
    }
}

/// An extension: its total length (8-byte aligned, header included), type, two bytes of
/// padding, then the data; a hostname is NUL-terminated and padded with zeros.
fn write_extension(out: &mut Vec<u8>, extension: &Extension) {
    let (kind, data, terminated) = match extension {
        Extension::Hostname(name) => (EXT_HOSTNAME, name.as_slice(), true),
        Extension::Unknown { kind, data } => (*kind, data.as_slice(), false),
    };
    let data_len = data.len() + usize::from(terminated);
    let padded = data_len.div_ceil(8) * 8;
    out.extend_from_slice(&((8 + padded) as u32).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&[0; 2]);
    out.extend_from_slice(data);
    out.resize(out.len() + padded - data.len(), 0);
}

// ---------------------------------------------------------------------------------------------
// Reading

/// A cursor over a message's bytes; every read is bounds-checked by the caller's length checks
/// first, and returns zeros past the end rather than panic.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let start = self.at.min(self.bytes.len());
        let end = (self.at + n).min(self.bytes.len());
        self.at += n;
        &self.bytes[start..end]
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let got = self.take(N);
        out[..got.len()].copy_from_slice(got);
        out
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.array())
    }

    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.array())
    }

    fn slots(&mut self) -> Slots {
        Slots(Box::new(self.array::<{ SLOTS / 8 }>()))
    }
}

/// Reads one whole message (a frame of [`frame_len`] bytes), refusing what Redis ignores.
pub fn decode(frame: &[u8]) -> Result<Message, Invalid> {
    if frame.len() < HEADER_LEN {
        return Err(Invalid::Truncated);
    }
    if &frame[..4] != SIGNATURE {
        return Err(Invalid::Signature);
    }
    let mut r = Reader {
        bytes: frame,
        at: 4,
    };
    let total = r.u32();
    if total as usize != frame.len() {
        return Err(Invalid::Truncated);
    }
    let version = r.u16();
    if version != VERSION {
        return Err(Invalid::Version(version));
    }
    let (header, count, extensions) = read_header(&mut r);
    let body_bytes = &frame[HEADER_LEN..];
    let body = read_body(&header, count, extensions, body_bytes, total)?;
    Ok(Message { header, body })
}

/// The header after the signature, length and version: the header, the gossip count and the
/// extension count.
fn read_header(r: &mut Reader<'_>) -> (Header, u16, u16) {
    let port = r.u16();
    let kind = r.u16();
    let count = r.u16();
    let (current_epoch, config_epoch, offset) = (r.u64(), r.u64(), r.u64());
    let sender = r.array::<NAME_LEN>();
    let slots = r.slots();
    let replica_of = r.array::<NAME_LEN>();
    let ip = r.array::<IP_LEN>();
    let extensions = r.u16();
    r.take(30);
    let (pport, cport, flags) = (r.u16(), r.u16(), r.u16());
    let state = r.array::<1>()[0];
    let mflags = r.array::<3>();
    let header = Header {
        kind,
        port,
        current_epoch,
        config_epoch,
        offset,
        sender,
        slots,
        replica_of,
        ip,
        pport,
        cport,
        flags,
        state,
        mflags,
    };
    (header, count, extensions)
}

/// The body, after Redis's check that the length field is what the type requires.
fn read_body(
    header: &Header,
    count: u16,
    extensions: u16,
    body: &[u8],
    total: u32,
) -> Result<Body, Invalid> {
    let expect = |body_len: u64| {
        let expected = HEADER_LEN as u64 + body_len;
        if expected == total as u64 {
            Ok(())
        } else {
            Err(Invalid::Length { total, expected })
        }
    };
    let mut r = Reader { bytes: body, at: 0 };
    match header.kind {
        kind::PING | kind::PONG | kind::MEET => read_ping(header, count, extensions, body, total),
        kind::FAIL => {
            expect(NAME_LEN as u64)?;
            Ok(Body::Fail { about: r.array() })
        }
        kind::PUBLISH | kind::PUBLISHSHARD => {
            let (channel_len, message_len) = (r.u32() as u64, r.u32() as u64);
            expect(8 + channel_len + message_len)?;
            let channel = r.take(channel_len as usize).to_vec();
            let message = r.take(message_len as usize).to_vec();
            Ok(Body::Publish { channel, message })
        }
        kind::FAILOVER_AUTH_REQUEST | kind::FAILOVER_AUTH_ACK | kind::MFSTART => {
            expect(0)?;
            Ok(Body::Empty)
        }
        kind::UPDATE => {
            expect(8 + NAME_LEN as u64 + (SLOTS / 8) as u64)?;
            let config_epoch = r.u64();
            let name = r.array();
            let slots = r.slots();
            Ok(Body::Update {
                config_epoch,
                name,
                slots,
            })
        }
        kind::MODULE => {
            let module_id = r.array::<8>();
            let len = r.u32() as u64;
            expect(13 + len)?;
            let kind = r.array::<1>()[0];
            let payload = r.take(len as usize).to_vec();
            Ok(Body::Module {
                module_id,
                kind,
                payload,
            })
        }
        // A type Redis does not know is taken as well formed.
        _ => Ok(Body::Unknown(body.to_vec())),
    }
}

/// PING, PONG and MEET: `count` gossip sections, then, when `EXT_DATA` is set, `extensions`
/// extensions, each a multiple of 8 bytes within the message; the length must add up exactly.
fn read_ping(
    header: &Header,
    count: u16,
    extensions: u16,
    body: &[u8],
    total: u32,
) -> Result<Body, Invalid> {
    let gossip_len = count as usize * GOSSIP_LEN;
    let mut expected = HEADER_LEN as u64 + gossip_len as u64;
    let mut found = Vec::new();
    if header.mflags[0] & message_flag::EXT_DATA != 0 {
        let mut at = gossip_len;
        for _ in 0..extensions {
            let ext_len = body
                .get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(Invalid::Extension)?;
            if ext_len % 8 != 0 || ext_len > u16::MAX as u32 || ext_len < 8 {
                return Err(Invalid::Extension);
            }
            if (total as u64).saturating_sub(expected) < ext_len as u64 {
                return Err(Invalid::Extension);
            }
            found.push(read_extension(&body[at..at + ext_len as usize]));
            expected += ext_len as u64;
            at += ext_len as usize;
        }
    }
    if expected != total as u64 {
        return Err(Invalid::Length { total, expected });
    }
    let mut r = Reader { bytes: body, at: 0 };
    let gossip = (0..count).map(|_| read_gossip(&mut r)).collect();
    Ok(Body::Ping {
        gossip,
        extensions: found,
    })
}

fn read_gossip(r: &mut Reader<'_>) -> Gossip {
    let name = r.array();
    let (ping_sent, pong_received) = (r.u32(), r.u32());
    let ip = r.array();
    let (port, cport, flags, pport) = (r.u16(), r.u16(), r.u16(), r.u16());
    r.take(2);
    Gossip {
        name,
        ping_sent,
        pong_received,
        ip,
        port,
        cport,
        flags,
        pport,
    }
}

/// One extension of `bytes.len()` bytes (its checked length), header included.
fn read_extension(bytes: &[u8]) -> Extension {
    let kind = u16::from_be_bytes([bytes[4], bytes[5]]);
    let data = &bytes[8..];
    if kind == EXT_HOSTNAME {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        Extension::Hostname(data[..end].to_vec())
    } else {
        Extension::Unknown {
            kind,
            data: data.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_flag;
    use proptest::prelude::*;

    fn name(c: u8) -> [u8; NAME_LEN] {
        [c; NAME_LEN]
    }

    fn ping(kind: u16, gossip: Vec<Gossip>, extensions: Vec<Extension>) -> Message {
        Message {
            header: Header::new(kind, name(b'a')),
            body: Body::Ping { gossip, extensions },
        }
    }

    /// Every field lands at the offset Redis 7.0's `cluster.h` asserts for it, big-endian.
    #[test]
    fn header_fields_sit_at_redis_offsets() {
        let mut h = Header::new(kind::PONG, name(b's'));
        (h.port, h.pport, h.cport, h.flags) = (0x0102, 0x0304, 0x0506, node_flag::PRIMARY);
        (h.current_epoch, h.config_epoch, h.offset) = (7, 8, 0x0102_0304_0506_0708);
        h.replica_of = name(b'r');
        h.ip[..9].copy_from_slice(b"127.0.0.1");
        (h.state, h.mflags) = (1, [message_flag::PAUSED, 0, 0]);
        h.slots.insert(0);
        h.slots.insert(9);
        h.slots.insert(16383);
        let hostname = Extension::Hostname(b"abc".to_vec());
        let bytes = encode(&Message {
            header: h,
            body: Body::Ping {
                gossip: vec![],
                extensions: vec![hostname],
            },
        });
        let be16 = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        let be64 = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
        assert_eq!(&bytes[0..4], b"RCmb");
        assert_eq!(
            u32::from_be_bytes(bytes[4..8].try_into().unwrap()),
            2256 + 16
        );
        assert_eq!((be16(8), be16(10), be16(12), be16(14)), (1, 0x0102, 1, 0));
        assert_eq!(
            (be64(16), be64(24), be64(32)),
            (7, 8, 0x0102_0304_0506_0708)
        );
        assert_eq!(&bytes[40..80], &name(b's'));
        assert_eq!((bytes[80], bytes[81], bytes[2127]), (1, 2, 0x80));
        assert_eq!(&bytes[2128..2168], &name(b'r'));
        assert_eq!(&bytes[2168..2177], b"127.0.0.1");
        assert_eq!(be16(2214), 1, "one extension");
        assert!(bytes[2216..2246].iter().all(|&b| b == 0));
        assert_eq!((be16(2246), be16(2248), be16(2250)), (0x0304, 0x0506, 1));
        assert_eq!(bytes[2252], 1);
        assert_eq!(bytes[2253], message_flag::PAUSED | message_flag::EXT_DATA);
        // The hostname: length 16 (8 of header, "abc\0" padded to 8), type 0, then the name.
        assert_eq!(&bytes[2256..2272], b"\0\0\0\x10\0\0\0\0abc\0\0\0\0\0");
    }

    #[test]
    fn a_gossip_section_is_104_bytes_in_redis_order() {
        let g = Gossip {
            name: name(b'g'),
            ping_sent: 1,
            pong_received: 2,
            ip: [b'x'; IP_LEN],
            port: 3,
            cport: 4,
            flags: 5,
            pport: 6,
        };
        let bytes = encode(&ping(kind::PING, vec![g.clone()], vec![]));
        let body = &bytes[HEADER_LEN..];
        assert_eq!(body.len(), GOSSIP_LEN);
        assert_eq!(&body[40..48], &[0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(&body[94..104], &[0, 3, 0, 4, 0, 5, 0, 6, 0, 0]);
        assert_eq!(u16::from_be_bytes([bytes[14], bytes[15]]), 1, "count");
        assert_eq!(decode(&bytes).unwrap(), ping(kind::PING, vec![g], vec![]));
    }

    /// The length checks of `clusterProcessPacket`: a message Redis ignores is refused.
    #[test]
    fn lengths_that_do_not_add_up_are_refused() {
        let mut bytes = encode(&ping(kind::MEET, vec![], vec![]));
        bytes[15] = 1; // one gossip section announced, none there
        assert!(matches!(decode(&bytes), Err(Invalid::Length { .. })));
        let fail = Message {
            header: Header::new(kind::FAIL, name(b'a')),
            body: Body::Fail { about: name(b'b') },
        };
        let mut bytes = encode(&fail);
        bytes.push(0);
        let total = (bytes.len() as u32).to_be_bytes();
        bytes[4..8].copy_from_slice(&total);
        assert!(matches!(decode(&bytes), Err(Invalid::Length { .. })));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), Err(Invalid::Truncated));
        let mut bytes = encode(&fail);
        bytes[9] = 2;
        assert_eq!(decode(&bytes), Err(Invalid::Version(2)));
        // An extension whose length is not a multiple of 8.
        let hostname = Extension::Hostname(b"h".to_vec());
        let mut bytes = encode(&ping(kind::PING, vec![], vec![hostname]));
        bytes[HEADER_LEN + 3] = 12;
        assert_eq!(decode(&bytes), Err(Invalid::Extension));
        // Without EXT_DATA the extensions are not read, and the bytes no longer add up.
        let hostname = Extension::Hostname(b"h".to_vec());
        let mut bytes = encode(&ping(kind::PING, vec![], vec![hostname]));
        bytes[2253] = 0;
        assert!(matches!(decode(&bytes), Err(Invalid::Length { .. })));
        // A type Redis does not know is taken as it comes.
        let mut unknown = Header::new(42, name(b'a'));
        unknown.port = 1;
        let message = Message {
            header: unknown,
            body: Body::Unknown(b"anything".to_vec()),
        };
        assert_eq!(decode(&encode(&message)).unwrap(), message);
    }

    #[test]
    fn frames_are_refused_on_signature_and_length() {
        assert_eq!(frame_len(b"RCmb\0\0\x08\xd0"), Ok(2256));
        assert_eq!(frame_len(b"RCmb\0\0\x08\xcf"), Err(BadFrame::Length(2255)));
        assert_eq!(frame_len(b"RCmX\0\0\x08\xd0"), Err(BadFrame::Signature));
    }

    fn arb_name() -> impl Strategy<Value = [u8; NAME_LEN]> {
        proptest::array::uniform32(b'0'..=b'f').prop_map(|a| {
            let mut n = [b'0'; NAME_LEN];
            n[..32].copy_from_slice(&a);
            n
        })
    }

    fn arb_slots() -> impl Strategy<Value = Slots> {
        proptest::collection::vec(0u16..16384, 0..20).prop_map(|v| {
            let mut s = Slots::empty();
            v.into_iter().for_each(|slot| s.insert(slot));
            s
        })
    }

    fn arb_gossip() -> impl Strategy<Value = Gossip> {
        (
            arb_name(),
            any::<(u32, u32, u16, u16, u16, u16)>(),
            any::<[u8; 16]>(),
        )
            .prop_map(
                |(name, (ping_sent, pong_received, port, cport, flags, pport), ip16)| {
                    let mut ip = [0; IP_LEN];
                    ip[..16].copy_from_slice(&ip16);
                    Gossip {
                        name,
                        ping_sent,
                        pong_received,
                        ip,
                        port,
                        cport,
                        flags,
                        pport,
                    }
                },
            )
    }

    fn arb_extension() -> impl Strategy<Value = Extension> {
        prop_oneof![
            proptest::collection::vec(1u8..=255, 0..40).prop_map(Extension::Hostname),
            (1u16..10, proptest::collection::vec(any::<u8>(), 0..4)).prop_map(|(kind, n)| {
                Extension::Unknown {
                    kind,
                    data: n.repeat(8).into_iter().take(n.len() * 8).collect(),
                }
            }),
        ]
    }

    fn arb_body(kind: u16) -> BoxedStrategy<Body> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..64);
        match kind {
            kind::PING | kind::PONG | kind::MEET => (
                proptest::collection::vec(arb_gossip(), 0..4),
                proptest::collection::vec(arb_extension(), 0..3),
            )
                .prop_map(|(gossip, extensions)| Body::Ping { gossip, extensions })
                .boxed(),
            kind::FAIL => arb_name().prop_map(|about| Body::Fail { about }).boxed(),
            kind::PUBLISH | kind::PUBLISHSHARD => (bytes(), bytes())
                .prop_map(|(channel, message)| Body::Publish { channel, message })
                .boxed(),
            kind::UPDATE => (any::<u64>(), arb_name(), arb_slots())
                .prop_map(|(config_epoch, name, slots)| Body::Update {
                    config_epoch,
                    name,
                    slots,
                })
                .boxed(),
            kind::MODULE => (any::<[u8; 8]>(), any::<u8>(), bytes())
                .prop_map(|(module_id, kind, payload)| Body::Module {
                    module_id,
                    kind,
                    payload,
                })
                .boxed(),
            kind::FAILOVER_AUTH_REQUEST | kind::FAILOVER_AUTH_ACK | kind::MFSTART => {
                Just(Body::Empty).boxed()
            }
            _ => bytes().prop_map(Body::Unknown).boxed(),
        }
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        (0u16..13).prop_flat_map(|kind| {
            (
                arb_name(),
                any::<(u16, u64, u64, u64, u16, u16, u16, u8)>(),
                arb_slots(),
                arb_body(kind),
                0u8..2,
            )
                .prop_map(move |(sender, f, slots, body, paused)| {
                    let mut header = Header::new(kind, sender);
                    (header.port, header.current_epoch, header.config_epoch) = (f.0, f.1, f.2);
                    (header.offset, header.pport, header.cport, header.flags) =
                        (f.3, f.4, f.5, f.6);
                    (header.state, header.slots) = (f.7, slots);
                    header.mflags[0] = paused;
                    if matches!(&body, Body::Ping { extensions, .. } if !extensions.is_empty()) {
                        header.mflags[0] |= message_flag::EXT_DATA;
                    }
                    Message { header, body }
                })
        })
    }

    proptest! {
        /// What is written reads back as the same message, and its frame length is its length.
        #[test]
        fn messages_round_trip(message in arb_message()) {
            let bytes = encode(&message);
            prop_assert_eq!(frame_len(bytes[..8].try_into().unwrap()), Ok(bytes.len()));
            prop_assert_eq!(decode(&bytes).unwrap(), message);
        }

        /// A valid message with bytes changed, as a faulty or hostile peer might send it: decoding
        /// never panics, and what still decodes round-trips.
        #[test]
        fn damaged_messages_never_panic(
            message in arb_message(),
            damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = encode(&message);
            for (at, value) in damage {
                let at = at.index(bytes.len());
                bytes[at] = value;
            }
            if let Ok(message) = decode(&bytes) {
                prop_assert_eq!(decode(&encode(&message)).unwrap(), message);
            }
        }

        /// Any bytes at all (made to pass the frame checks when long enough): decoding answers,
        /// never panics.
        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..3000), kind in 0u16..12) {
            if bytes.len() >= HEADER_LEN {
                bytes[..4].copy_from_slice(SIGNATURE);
                let total = (bytes.len() as u32).to_be_bytes();
                bytes[4..8].copy_from_slice(&total);
                bytes[8..10].copy_from_slice(&VERSION.to_be_bytes());
                bytes[12..14].copy_from_slice(&kind.to_be_bytes());
            }
            // What decodes re-encodes to a message that reads back the same (the fuzz
            // target's property: nothing is lost or invented between the two).
            if let Ok(message) = decode(&bytes) {
                prop_assert_eq!(decode(&encode(&message)).unwrap(), message);
            }
        }
    }
}
