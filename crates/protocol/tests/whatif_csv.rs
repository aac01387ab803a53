//! The what-if table as CSV: hand-checked rows, the recorded row first.

use memscope_allocator::PredictedOom;
use memscope_protocol::lens::{whatif_csv, WhatIfRow};

fn row(config: &str, peak_reserved_bytes: u64) -> WhatIfRow {
    WhatIfRow {
        config: config.to_owned(),
        peak_reserved_bytes,
        peak_after_first_oom: false,
        cached_at_peak_bytes: 2_097_152,
        ooms: 0,
        first_oom: None,
        start_over_capacity: false,
        initial_reserved_bytes: 0,
        first_oom_time_x: None,
        first_oom_events_x: None,
        curve_time_x: vec![0.0, 10.0],
        curve_events_x: vec![0.0, 1.0],
        curve_bytes: vec![0.0, 2_097_152.0],
        replay_ms: 3.5,
    }
}

#[test]
fn rows_with_the_difference_from_the_recorded_one_and_the_first_oom() {
    let recorded = row("recorded", 20_971_520);
    let smaller = row("expandable_segments:True", 18_874_368);
    let oom = WhatIfRow {
        peak_after_first_oom: true,
        ooms: 3,
        first_oom: Some(PredictedOom {
            entry: 41,
            allocation: 7,
            requested_bytes: 8_388_608,
            rounded_bytes: 8_388_608,
            reserved_bytes: 16_777_216,
            allocated_bytes: 12_582_912,
            cached_bytes: 4_194_304,
            largest_free_bytes: 2_097_152,
        }),
        ..row(
            "max_split_size_mb:128,roundup_power2_divisions:[256:\"4\"]",
            25_165_824,
        )
    };
    assert_eq!(
        whatif_csv("16MiB", &[recorded, smaller, oom]),
        "config,capacity,peak_reserved_bytes,peak_after_first_oom,vs_recorded_bytes,\
         cached_at_peak_bytes,ooms,start_over_capacity,initial_reserved_bytes,first_oom_entry,\
         first_oom_requested_bytes,first_oom_reserved_bytes,first_oom_cached_bytes,\
         first_oom_largest_free_bytes\r\n\
         recorded,16MiB,20971520,false,,2097152,0,false,0,,,,,\r\n\
         expandable_segments:True,16MiB,18874368,false,-2097152,2097152,0,false,0,,,,,\r\n\
         \"max_split_size_mb:128,roundup_power2_divisions:[256:\"\"4\"\"]\",16MiB,25165824,true,\
         4194304,2097152,3,false,0,41,8388608,16777216,4194304,2097152\r\n"
    );
    assert_eq!(
        whatif_csv("", &[]).lines().count(),
        1,
        "no rows: the header alone"
    );
}
