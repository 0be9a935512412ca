//! The ranges sorted set commands select by: scores with inclusive, exclusive and infinite bounds
//! (`ZRANGEBYSCORE k (1 +inf`), and member bytes (`ZRANGEBYLEX k [a (c`, `-`, `+`).
//!
//! Both encodings test elements against these with the same predicates, so that a small set and
//! a big one answer alike. Parsing the command arguments is the server's business; these types
//! only hold the parsed bounds.

use std::cmp::Ordering;

/// A score interval; NaN never occurs (the parser refuses it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    /// The bound itself is excluded (`(1`).
    pub min_ex: bool,
    pub max_ex: bool,
}

impl ScoreRange {
    /// Every score, `-inf` to `+inf`.
    pub const ALL: ScoreRange = ScoreRange {
        min: f64::NEG_INFINITY,
        max: f64::INFINITY,
        min_ex: false,
        max_ex: false,
    };

    pub fn inclusive(min: f64, max: f64) -> Self {
        ScoreRange {
            min,
            max,
            min_ex: false,
            max_ex: false,
        }
    }

    #[inline]
    pub fn gte_min(&self, score: f64) -> bool {
        if self.min_ex {
            score > self.min
        } else {
            score >= self.min
        }
    }

    #[inline]
    pub fn lte_max(&self, score: f64) -> bool {
        if self.max_ex {
            score < self.max
        } else {
            score <= self.max
        }
    }

    #[inline]
    pub fn contains(&self, score: f64) -> bool {
        self.gte_min(score) && self.lte_max(score)
    }

    /// True when no score can be inside (`min > max`, or equal bounds with one excluded).
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_ex || self.max_ex))
    }
}

/// One end of a lexicographic range. `-` and `+` are the infinitely small and large strings;
/// they count as exclusive bounds, so `[- -]` is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexBound<'a> {
    NegInf,
    PosInf,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl LexBound<'_> {
    fn is_exclusive(&self) -> bool {
        !matches!(self, LexBound::Inclusive(_))
    }

    /// Orders two bounds by their values: `-` below every string, `+` above.
    fn cmp_value(&self, other: &LexBound<'_>) -> Ordering {
        fn rank<'b>(b: &LexBound<'b>) -> (u8, &'b [u8]) {
            match b {
                LexBound::NegInf => (0, &[]),
                LexBound::Inclusive(s) | LexBound::Exclusive(s) => (1, s),
                LexBound::PosInf => (2, &[]),
            }
        }
        rank(self).cmp(&rank(other))
    }
}

/// A range of member bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

impl<'a> LexRange<'a> {
    pub const ALL: LexRange<'static> = LexRange {
        min: LexBound::NegInf,
        max: LexBound::PosInf,
    };

    #[inline]
    pub fn gte_min(&self, member: &[u8]) -> bool {
        match self.min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Inclusive(m) => member >= m,
            LexBound::Exclusive(m) => member > m,
        }
    }

    #[inline]
    pub fn lte_max(&self, member: &[u8]) -> bool {
        match self.max {
            LexBound::PosInf => true,
            LexBound::NegInf => false,
            LexBound::Inclusive(m) => member <= m,
            LexBound::Exclusive(m) => member < m,
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.gte_min(member) && self.lte_max(member)
    }

    /// True when no member can be inside.
    pub fn is_empty(&self) -> bool {
        match self.min.cmp_value(&self.max) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.is_exclusive() || self.max.is_exclusive(),
            Ordering::Less => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_ranges() {
        assert!(!ScoreRange::inclusive(1.0, 1.0).is_empty());
        assert!(ScoreRange::inclusive(2.0, 1.0).is_empty());
        let half_open = ScoreRange {
            min: 1.0,
            max: 1.0,
            min_ex: true,
            max_ex: false,
        };
        assert!(half_open.is_empty());
        assert!(!ScoreRange::ALL.is_empty());
        let lex = |min, max| LexRange { min, max };
        assert!(lex(LexBound::NegInf, LexBound::NegInf).is_empty());
        assert!(lex(LexBound::PosInf, LexBound::NegInf).is_empty());
        assert!(!lex(LexBound::Inclusive(b"a"), LexBound::Inclusive(b"a")).is_empty());
        assert!(lex(LexBound::Exclusive(b"a"), LexBound::Inclusive(b"a")).is_empty());
        assert!(lex(LexBound::Inclusive(b"b"), LexBound::Inclusive(b"a")).is_empty());
        assert!(!LexRange::ALL.is_empty());
        let r = lex(LexBound::Exclusive(b"a"), LexBound::Inclusive(b"c"));
        assert!(!r.contains(b"a") && r.contains(b"b") && r.contains(b"c") && !r.contains(b"ca"));
    }
}
