//! Unix times as UTC calendar dates, with no clock and no time zones: [`http_date`] (RFC 1123, as
//! HTTP and iperf3 print a date) and `UtcTime`, the fields every other printed date starts from
//! (iperf 2's CSV, the result page).

/// RFC 1123 date in GMT, e.g. "Wed, 02 Dec 2026 14:08:17 GMT".
#[allow(
    clippy::cast_possible_truncation,
    reason = "calendar fields (day, month, hour, …) of a date are small numbers"
)]
pub fn http_date(unix_secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = UtcTime::of(unix_secs);
    let weekday = DAYS[((unix_secs / 86_400 + 4) % 7) as usize]; // 1970-01-01 was a Thursday
    format!(
        "{weekday}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        t.day,
        MONTHS[t.month as usize - 1],
        t.year,
        t.hour,
        t.minute,
        t.second
    )
}

/// A Unix time as every page and screen prints a date: `2026-12-02 14:03:07 UTC+2`, in the zone
/// `offset_east_min` minutes east of UTC (`UTC` for 0, `UTC-5`, `UTC+5:30`), the zone always
/// shown.
pub fn date_words(unix_secs: u64, offset_east_min: i32) -> String {
    let local = unix_secs.saturating_add_signed(i64::from(offset_east_min) * 60);
    let t = UtcTime::of(local);
    let zone = match offset_east_min {
        0 => "UTC".to_string(),
        m => {
            let sign = if m > 0 { '+' } else { '-' };
            let (h, min) = (m.unsigned_abs() / 60, m.unsigned_abs() % 60);
            if min == 0 {
                format!("UTC{sign}{h}")
            } else {
                format!("UTC{sign}{h}:{min:02}")
            }
        }
    };
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02} {zone}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// A Unix time in seconds as UTC calendar fields: year, month 1–12, day 1–31, hour, minute,
/// second. Every printed date (HTTP, iperf 2's CSV, the result page) starts here.
pub(crate) struct UtcTime {
    pub year: u64,
    pub month: u64,
    pub day: u64,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl UtcTime {
    pub(crate) fn of(unix_secs: u64) -> UtcTime {
        let (year, month, day) = civil_from_days(unix_secs / 86_400);
        let secs = unix_secs % 86_400;
        UtcTime {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
        }
    }
}

/// Proleptic Gregorian (year, month 1–12, day 1–31) of a day count since 1970-01-01. Years are
/// counted from March so that the leap day is the last day of a year; 400-year eras repeat exactly.
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    const ERA_DAYS: u64 = 146_097;
    let shifted = days + 719_468; // days from 0000-03-01
    let (era, day_of_era) = (shifted / ERA_DAYS, shifted % ERA_DAYS);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_say_their_zone() {
        assert_eq!(date_words(0, 0), "1970-01-01 00:00:00 UTC");
        assert_eq!(date_words(1_764_684_187, 120), "2025-12-02 16:03:07 UTC+2");
        assert_eq!(date_words(1_764_684_187, -300), "2025-12-02 09:03:07 UTC-5");
        assert_eq!(
            date_words(1_764_684_187, 330),
            "2025-12-02 19:33:07 UTC+5:30"
        );
        assert_eq!(date_words(951_782_400, 0), "2000-02-29 00:00:00 UTC");
        assert_eq!(
            date_words(0, -60),
            "1970-01-01 00:00:00 UTC-1",
            "never before 1970"
        );
    }

    #[test]
    fn http_dates_follow_the_calendar() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(http_date(1_796_220_497), "Wed, 02 Dec 2026 14:08:17 GMT");
    }
}
