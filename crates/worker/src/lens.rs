//! Answers for the linked views of one device.

use js_sys::Array;
use memscope_protocol::lens::{LensRequest, LensResponse};

use memscope_snapshot::Snapshot;

use crate::DeviceModel;

/// Answers `request` about device `d` of `snap`, with the buffers to transfer.
pub fn handle(snap: &Snapshot, d: &mut DeviceModel, request: LensRequest) -> (LensResponse, Array) {
    match request {
        LensRequest::Settings => (
            LensResponse::Settings(d.analysis(snap).settings().clone()),
            Array::new(),
        ),
    }
}
