//! Lens messages: what the page asks a worker about one device for the linked views
//! below the memory timeline (segments, allocator state, pools, flame graph, call-site
//! lanes, top allocations, range and point, search, settings).

use serde::{Deserialize, Serialize};

use memscope_analysis::AllocatorSettings;

/// A lens question about one device.
#[derive(Serialize, Deserialize)]
pub enum LensRequest {
    /// The allocator settings, with units.
    Settings,
}

/// A lens answer about one device.
#[derive(Serialize, Deserialize)]
pub enum LensResponse {
    /// The allocator settings, with units.
    Settings(AllocatorSettings),
}
