//! Unix times as UTC calendar dates, with no clock and no time zones: [`http_date`] (RFC 1123, as
//! HTTP and iperf3 print a date) and `UtcTime`, the fields every other printed date starts from
//! (iperf 2's CSV, the result page); and back: [`parse_when`] reads the times a history filter
//! is given (`--since 2026-12-01`, `--since 24h`).

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

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civil_from_days`); None
/// for a month or day that does not exist, or a year before 1970 or after 9999.
pub(crate) fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1970..=9999).contains(&year) || !(1..=12).contains(&month) {
        return None;
    }
    if day == 0 || day > month_days[usize::try_from(month - 1).ok()?] {
        return None;
    }
    let year = year - u64::from(month <= 2);
    let (era, year_of_era) = (year / 400, year % 400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// A time as a history filter takes it, in seconds since the Unix epoch: a date (`2026-12-01`)
/// or a date and time (`2026-12-01 14:00`, `2026-12-01T14:00:05`) in the zone `offset_east_min`
/// minutes east of UTC (a trailing `Z`: UTC), or a span back from `now_secs` (`90s`, `30m`,
/// `24h`, `7d`, `2w`). The error says what is accepted.
pub fn parse_when(text: &str, now_secs: u64, offset_east_min: i32) -> Result<u64, String> {
    let text = text.trim();
    let refused = || {
        format!(
            "'{text}' is not a time: give a date (2026-12-01), a date and time \
             (2026-12-01 14:00) or a span back from now (30m, 24h, 7d)"
        )
    };
    if let Some(unit) = text.chars().last().filter(char::is_ascii_alphabetic)
        && text[..text.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && text.len() > 1
    {
        let per = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(refused()),
        };
        let n: u64 = text[..text.len() - 1].parse().map_err(|_| refused())?;
        return Ok(now_secs.saturating_sub(n.saturating_mul(per)));
    }
    let (date, time, offset_east_min) = match text.split_once(['T', ' ']) {
        Some((d, t)) => match t.strip_suffix('Z') {
            Some(t) => (d, Some(t), 0),
            None => (d, Some(t), offset_east_min),
        },
        None => (text, None, offset_east_min),
    };
    let number = |s: &str, digits: usize| -> Option<u64> {
        (s.len() == digits && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
    };
    let fields: Vec<&str> = date.split('-').collect();
    let [y, mo, d] = fields.as_slice() else {
        return Err(refused());
    };
    let days = match (number(y, 4), number(mo, 2), number(d, 2)) {
        (Some(y), Some(mo), Some(d)) => days_from_civil(y, mo, d).ok_or_else(refused)?,
        _ => return Err(refused()),
    };
    let secs = match time {
        None => 0,
        Some(time) => {
            let parts: Vec<Option<u64>> = time.split(':').map(|p| number(p, 2)).collect();
            match parts.as_slice() {
                [Some(h), Some(m)] if *h < 24 && *m < 60 => h * 3600 + m * 60,
                [Some(h), Some(m), Some(s)] if *h < 24 && *m < 60 && *s < 60 => {
                    h * 3600 + m * 60 + s
                }
                _ => return Err(refused()),
            }
        }
    };
    let local = days * 86_400 + secs;
    Ok(local.saturating_add_signed(-i64::from(offset_east_min) * 60))
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

    #[test]
    fn filter_times_read_dates_and_spans() {
        let now = 1_796_220_497; // 2026-12-02 14:08:17 UTC
        assert_eq!(parse_when("2026-12-02", now, 0), Ok(1_796_169_600));
        assert_eq!(parse_when("2026-12-02 14:08", now, 0), Ok(1_796_220_480));
        assert_eq!(parse_when("2026-12-02T14:08:17Z", now, 120), Ok(now));
        assert_eq!(parse_when("2000-02-29", now, 0), Ok(951_782_400));
        assert_eq!(parse_when("1970-01-01", now, 0), Ok(0));
        assert_eq!(parse_when("24h", now, 60), Ok(now - 86_400));
        assert_eq!(parse_when("2w", now, 0), Ok(now - 14 * 86_400));
        assert_eq!(parse_when("90s", 10, 0), Ok(0), "never before 1970");
        for bad in [
            "",
            "h",
            "24",
            "24x",
            "-1h",
            "2026-02-29",
            "2026-13-01",
            "2026-1-01",
            "2026-12-02 24:00",
            "2026-12-02 14:60",
            "yesterday",
            "1969-12-31",
            "99999999999999999999999d",
        ] {
            assert!(parse_when(bad, now, 0).is_err(), "{bad:?} was taken");
        }
        assert_eq!(
            parse_when("2026-12-02 16:08", now, 120),
            Ok(1_796_220_480),
            "a date and time in UTC+2"
        );
        assert_eq!(
            parse_when("2026-12-02", now, -300),
            Ok(1_796_169_600 + 5 * 3600)
        );
        for day in 0..20_000 {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), Some(day), "{y}-{m}-{d}");
        }
    }
}
