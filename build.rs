//! Emits the linker settings a Node-API addon needs (napi-rs convention).
fn main() {
    napi_build::setup();
}
