//! `strftime_now(format)`: the current UTC time in Python's `strftime` notation (templates
//! such as Llama 3.2's and Mistral's put today's date into the system turn).

use std::fmt::Write;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub fn strftime_now(format: String) -> String {
    let secs = crate::clock::unix_now() as i64;
    strftime(&format, secs)
}

/// Formats a Unix time (UTC) with the common `strftime` directives.
pub fn strftime(format: &str, secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = (days + 3).rem_euclid(7) as usize;
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let (hour, minute, second) = (in_day / 3600, in_day / 60 % 60, in_day % 60);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let month_name = MONTHS[(month - 1) as usize];
        let _ = match chars.next() {
            Some('Y') => write!(out, "{year}"),
            Some('y') => write!(out, "{:02}", year.rem_euclid(100)),
            Some('m') => write!(out, "{month:02}"),
            Some('d') => write!(out, "{day:02}"),
            Some('-') => match chars.next() {
                Some('d') => write!(out, "{day}"),
                Some('m') => write!(out, "{month}"),
                Some(other) => write!(out, "%-{other}"),
                None => write!(out, "%-"),
            },
            Some('b') => write!(out, "{}", &month_name[..3]),
            Some('B') => write!(out, "{month_name}"),
            Some('a') => write!(out, "{}", &WEEKDAYS[weekday][..3]),
            Some('A') => write!(out, "{}", WEEKDAYS[weekday]),
            Some('H') => write!(out, "{hour:02}"),
            Some('M') => write!(out, "{minute:02}"),
            Some('S') => write!(out, "{second:02}"),
            Some('j') => write!(out, "{day_of_year:03}"),
            Some('%') => write!(out, "%"),
            Some(other) => write!(out, "%{other}"),
            None => write!(out, "%"),
        };
    }
    out
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_like_python() {
        // 2024-07-26 13:05:09 UTC, a Friday.
        let t = 1_721_999_109;
        assert_eq!(super::strftime("%d %b %Y", t), "26 Jul 2024");
        assert_eq!(
            super::strftime("%Y-%m-%d %H:%M:%S %A %j", t),
            "2024-07-26 13:05:09 Friday 208"
        );
    }
}
