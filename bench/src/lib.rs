//! The benchmarks' shared code: the labelled anomaly cases ([`cases`]).

pub mod cases;
