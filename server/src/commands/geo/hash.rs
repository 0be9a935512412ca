//! Geohash arithmetic, Redis's `geohash.c` and `geohash_helper.c` rewritten: positions to 52-bit
//! scores and back (the centres of 26-step cells), the haversine distance with Redis's earth
//! radius, the cells a search looks at, and the formatting of distances and coordinates.

// ---------------------------------------------------------------------------------------------
// Geohash arithmetic (Redis's geohash.c and geohash_helper.c, rewritten)
// ---------------------------------------------------------------------------------------------

pub(super) const STEP_MAX: u8 = 26;
pub(super) const LAT_MIN: f64 = -85.05112878;
pub(super) const LAT_MAX: f64 = 85.05112878;
pub(super) const LONG_MIN: f64 = -180.0;
pub(super) const LONG_MAX: f64 = 180.0;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(deg: f64) -> f64 {
    deg * D_R
}

fn rad_deg(rad: f64) -> f64 {
    rad / D_R
}

/// A cell: `step` bits of each coordinate, interleaved (latitude in the even bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Cell {
    pub(super) bits: u64,
    pub(super) step: u8,
}

impl Cell {
    pub(super) fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Range {
    pub(super) min: f64,
    pub(super) max: f64,
}

pub(super) const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub(super) const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

#[derive(Debug, Clone, Copy)]
struct Area {
    longitude: Range,
    latitude: Range,
}

/// Spreads the 32 bits of `v` over the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The inverse of [`spread`]: the even bits of `x`, packed.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// The cell of `step` bits holding a position, in the given coordinate ranges; `None` outside
/// them (or outside Redis's absolute limits).
pub(super) fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Cell> {
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // C converts the doubles to uint32 by truncation.
    Some(Cell {
        bits: spread(lat_offset as u32) | (spread(long_offset as u32) << 1),
        step,
    })
}

fn decode(cell: Cell) -> Option<Area> {
    if cell.is_zero() {
        return None;
    }
    let lat_cells = squash(cell.bits) as f64;
    let long_cells = squash(cell.bits >> 1) as f64;
    let scale = (1u64 << cell.step) as f64;
    let lat_scale = LAT_RANGE.max - LAT_RANGE.min;
    let long_scale = LONG_RANGE.max - LONG_RANGE.min;
    Some(Area {
        latitude: Range {
            min: LAT_RANGE.min + (lat_cells / scale) * lat_scale,
            max: LAT_RANGE.min + ((lat_cells + 1.0) / scale) * lat_scale,
        },
        longitude: Range {
            min: LONG_RANGE.min + (long_cells / scale) * long_scale,
            max: LONG_RANGE.min + ((long_cells + 1.0) / scale) * long_scale,
        },
    })
}

/// The centre of a cell, clamped to the coordinate limits.
fn center(area: &Area) -> (f64, f64) {
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (longitude, latitude)
}

/// The position a score stands for (the centre of its 26-step cell).
pub(super) fn decode_score(score: f64) -> Option<(f64, f64)> {
    let cell = Cell {
        bits: score as u64,
        step: STEP_MAX,
    };
    decode(cell).map(|a| center(&a))
}

/// The 52-bit score of a cell: its bits moved to the top of 52.
pub(super) fn align52(cell: Cell) -> u64 {
    cell.bits << (52 - cell.step as u32 * 2)
}

/// Moves a cell one step east (`d` > 0) or west in longitude (the odd bits).
fn move_x(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - cell.step as u32 * 2;
    let mut x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    cell.bits = x | y;
}

/// Moves a cell one step north (`d` > 0) or south in latitude (the even bits).
fn move_y(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - cell.step as u32 * 2;
    let x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    cell.bits = x | y;
}

fn neighbour(cell: Cell, dx: i8, dy: i8) -> Cell {
    let mut n = cell;
    move_x(&mut n, dx);
    move_y(&mut n, dy);
    n
}

/// Redis's search step for a radius: the coarsest cells that still cover it, one or two
/// steps coarser near the poles.
fn steps_for_radius(mut range_meters: f64, latitude: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers: a circle (radius) or a box (width × height), in the query's unit.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shape {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Search {
    pub(super) longitude: f64,
    pub(super) latitude: f64,
    pub(super) shape: Shape,
    /// Metres per unit.
    pub(super) conversion: f64,
}

impl Search {
    /// The bounding box of the shape: min longitude, min latitude, max longitude, max latitude.
    fn bounds(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.shape {
            Shape::Circle { radius } => (radius, radius),
            Shape::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * half_height;
        let width = self.conversion * half_width;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude - lat_delta).cos());
        // The box is widest on the side nearer the equator... measured as Redis does: the
        // bottom edge in the southern hemisphere, the top edge in the northern.
        let long_delta = if self.latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.longitude - long_delta,
            self.latitude - lat_delta,
            self.longitude + long_delta,
            self.latitude + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order: the centre's, then N, S, E, W, NE, NW, SE, SW
    /// (zero where a neighbour cannot hold a match).
    pub(super) fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_meters = match self.shape {
            Shape::Circle { radius } => radius,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = steps_for_radius(radius_meters, self.latitude);
        let around = |steps: u8| {
            let cell = encode(LONG_RANGE, LAT_RANGE, self.longitude, self.latitude, steps)
                .unwrap_or(Cell {
                    bits: 0,
                    step: steps,
                });
            let n = [
                neighbour(cell, 0, 1),
                neighbour(cell, 0, -1),
                neighbour(cell, 1, 0),
                neighbour(cell, -1, 0),
                neighbour(cell, 1, 1),
                neighbour(cell, -1, 1),
                neighbour(cell, 1, -1),
                neighbour(cell, -1, -1),
            ];
            (cell, n)
        };
        let (mut cell, mut n) = around(steps);
        // If the neighbours do not reach the bounding box, the cells are too small: one step
        // coarser.
        let reach = |c: Cell| decode(c);
        let mut decrease = false;
        if let Some(north) = reach(n[0]) {
            decrease |= north.latitude.max < max_lat;
        }
        if let Some(south) = reach(n[1]) {
            decrease |= south.latitude.min > min_lat;
        }
        if let Some(east) = reach(n[2]) {
            decrease |= east.longitude.max < max_lon;
        }
        if let Some(west) = reach(n[3]) {
            decrease |= west.longitude.min > min_lon;
        }
        if steps > 1 && decrease {
            steps -= 1;
            (cell, n) = around(steps);
        }
        // Drop the neighbours on a side the shape does not reach.
        if steps >= 2 {
            if let Some(area) = decode(cell) {
                let zero = Cell::default();
                if area.latitude.min < min_lat {
                    n[1] = zero; // south
                    n[7] = zero; // south-west
                    n[6] = zero; // south-east
                }
                if area.latitude.max > max_lat {
                    n[0] = zero; // north
                    n[4] = zero; // north-east
                    n[5] = zero; // north-west
                }
                if area.longitude.min < min_lon {
                    n[3] = zero; // west
                    n[7] = zero; // south-west
                    n[5] = zero; // north-west
                }
                if area.longitude.max > max_lon {
                    n[2] = zero; // east
                    n[6] = zero; // south-east
                    n[4] = zero; // north-east
                }
            }
        }
        [cell, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]
    }

    /// The distance from the centre to a point if it lies inside the shape.
    pub(super) fn distance_if_inside(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.shape {
            Shape::Circle { radius } => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                (d <= radius * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(latitude, self.latitude) > height_m / 2.0 {
                    return None;
                }
                if distance(longitude, latitude, self.longitude, latitude) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Redis's haversine distance in metres.
pub(super) fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// A distance as Redis prints it: rounded (half to even) to four decimals.
pub(super) fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    let negative = scaled < 0.0;
    let value = scaled.abs() as u64;
    format!(
        "{}{}.{:04}",
        if negative { "-" } else { "" },
        value / 10000,
        value % 10000
    )
}

/// A coordinate as Redis's `%.17Lf` less trailing zeros.
pub(super) fn format_coordinate(v: f64) -> String {
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_squash_are_inverse() {
        for v in [0u32, 1, 0x2aaa_aaaa, 0x03ff_ffff, u32::MAX, 123_456_789] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(spread(v) & 0xaaaa_aaaa_aaaa_aaaa, 0);
        }
    }

    #[test]
    fn a_position_decodes_to_the_centre_of_its_cell() {
        let cell = encode(LONG_RANGE, LAT_RANGE, 13.361389, 38.115556, 26).unwrap();
        let score = align52(cell);
        // Redis stores Palermo at this score (GEOADD then ZSCORE).
        assert_eq!(score, 3479099956230698);
        let (lon, lat) = decode_score(score as f64).unwrap();
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
    }

    #[test]
    fn distances_print_with_four_decimals_rounding_half_to_even() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(166274.15156960033), "166274.1516");
        assert_eq!(format_distance(0.00005), "0.0000");
        assert_eq!(format_distance(-1.5), "-1.5000");
    }

    #[test]
    fn coordinates_print_like_percent_17lf_trimmed() {
        assert_eq!(
            format_coordinate(13.361_389_338_970_184),
            "13.36138933897018433"
        );
        assert_eq!(format_coordinate(1.0), "1");
        assert_eq!(format_coordinate(-0.0), "0");
        assert_eq!(format_coordinate(0.5), "0.5");
    }

    #[test]
    fn neighbours_step_across_cell_edges() {
        let cell = Cell {
            bits: 0b0000,
            step: 2,
        };
        let east = neighbour(cell, 1, 0);
        assert_eq!(squash(east.bits >> 1), 1);
        assert_eq!(squash(east.bits), 0);
        let north = neighbour(cell, 0, 1);
        assert_eq!(squash(north.bits), 1);
        // West of the first column wraps around to the last.
        let west = neighbour(cell, -1, 0);
        assert_eq!(squash(west.bits >> 1), 3);
    }
}
