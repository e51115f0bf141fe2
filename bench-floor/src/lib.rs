//! The exact floor of `testhost bench` (`make bench`), and how the bench times the policy
//! against it.
//!
//! Built for wasm32 it is a waPC module whose `validate` makes the host calls its payload lists,
//! in order, through the same waPC guest as the policy, and drops the answers. Given the calls
//! the policy made on a request, it costs the host what those calls cost (routing, the API server
//! model's cached answers, the copies into the module) and the module almost nothing else, so
//! the policy's time over it is the policy's own work. With a payload whose first byte is 1 it
//! also parses every answer as JSON, keeping nothing (serde_json, as the policy): what reading the
//! answers costs a module at the least.
//!
//! On the host it is what the test host uses: [`record`] writes the calls as the module reads
//! them, [`payloads`] the two payloads, [`alternate`] takes the turns of every timing of the
//! bench, [`percentile`] reads them.

/// Appends one host call to `out` as [`Calls`] reads it: binding, namespace, operation and
/// payload, each a little-endian u32 length and its bytes, so that nothing has to be parsed.
pub fn record(out: &mut Vec<u8>, names: [&str; 3], payload: &[u8]) {
    for field in names.map(str::as_bytes).into_iter().chain([payload]) {
        out.extend((field.len() as u32).to_le_bytes().iter().chain(field));
    }
}

/// The floor's two payloads for the recorded `calls`: the answers dropped unread, then read.
pub fn payloads(calls: &[u8]) -> [Vec<u8>; 2] {
    [0, 1].map(|read| [&[read][..], calls].concat())
}

/// Times `n` turns of each of `cases` cases (`time(case)`), rotating which goes first so that
/// noise hits them alike; the times of each, sorted.
pub fn alternate<E>(
    cases: usize,
    n: usize,
    mut time: impl FnMut(usize) -> Result<f64, E>,
) -> Result<Vec<Vec<f64>>, E> {
    let mut times = vec![Vec::new(); cases];
    for case in (0..n * cases).map(|i| (i + i / cases) % cases) {
        times[case].push(time(case)?);
    }
    times.iter_mut().for_each(|t| t.sort_by(f64::total_cmp));
    Ok(times)
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied().unwrap_or(f64::NAN)
}

/// The calls a payload lists (after its first byte), as (binding, namespace, operation,
/// payload); stops at the first call that is cut short or whose names are not UTF-8.
pub struct Calls<'a>(pub &'a [u8]);

impl<'a> Iterator for Calls<'a> {
    type Item = (&'a str, &'a str, &'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let mut field = || -> Option<&'a [u8]> {
            let (len, rest) = self.0.split_first_chunk::<4>()?;
            let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
            let (field, rest) = rest.split_at_checked(len)?;
            self.0 = rest;
            Some(field)
        };
        let text = |bytes: &'a [u8]| std::str::from_utf8(bytes).ok();
        let (binding, namespace, operation) = (field()?, field()?, field()?);
        let payload = field()?;
        Some((text(binding)?, text(namespace)?, text(operation)?, payload))
    }
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn wapc_init() {
    wapc_guest::register_function("validate", replay);
    // the test host loads a module as a policy, checking that it accepts the default settings
    wapc_guest::register_function("validate_settings", |_| Ok(br#"{"valid":true}"#.to_vec()));
}

/// Makes every call; an answer is dropped unread, or parsed and dropped when the first byte is
/// 1; an error is dropped, as its cost is the host's.
#[cfg(target_arch = "wasm32")]
fn replay(payload: &[u8]) -> wapc_guest::CallResult {
    let (read, calls) = payload
        .split_first()
        .map_or((false, payload), |(r, c)| (*r == 1, c));
    for (binding, namespace, operation, payload) in Calls(calls) {
        let answer = wapc_guest::host_call(binding, namespace, operation, payload);
        if let (Ok(answer), true) = (answer, read) {
            serde_json::from_slice::<serde::de::IgnoredAny>(&answer)?;
        }
    }
    // the answer of a policy that accepts, which the test host reads
    Ok(br#"{"accepted":true}"#.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_calls_are_read_back_in_order_and_a_cut_call_ends_the_list() {
        let mut calls = Vec::new();
        record(
            &mut calls,
            ["kubewarden", "kubernetes", "list_resources_all"],
            b"{}",
        );
        record(&mut calls, ["b", "n", "o"], b"");
        let read: Vec<_> = Calls(&calls).collect();
        assert_eq!(
            read,
            [
                ("kubewarden", "kubernetes", "list_resources_all", &b"{}"[..]),
                ("b", "n", "o", &b""[..])
            ]
        );
        assert_eq!(Calls(&calls[..calls.len() - 1]).count(), 1);
        assert_eq!(Calls(&[9, 0, 0, 0, 1]).count(), 0);
        let [exact, read] = payloads(&calls);
        assert_eq!((exact[0], &exact[1..], read[0]), (0, &calls[..], 1));
    }

    #[test]
    fn turns_rotate_and_each_case_gets_its_p50() {
        let mut order = Vec::new();
        let p50 = alternate(3, 3, |case| {
            order.push(case);
            Ok::<_, ()>((case * 10 + order.len()) as f64)
        });
        assert_eq!(order, [0, 1, 2, 1, 2, 0, 2, 0, 1]);
        // case 0 ran at turns 1, 6 and 8
        let p50: Vec<f64> = p50.unwrap().iter().map(|t| percentile(t, 0.5)).collect();
        assert_eq!(p50, [6.0, 14.0, 25.0]);
        assert_eq!(alternate(2, 1, |_| Err::<f64, _>("stop")), Err("stop"));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&values[..10], 0.99), 10.0);
        assert_eq!(percentile(&[7.0], 0.5), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
