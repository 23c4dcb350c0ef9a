//! Plain address types: CIDR ranges and the client behind trusted proxies,
//! the key a client is counted under, and the per-address sign-in throttle.
//! std and chrono only, so that config, the app state and the web layer
//! all take them from here.

mod client;
pub mod proxy;
pub mod throttle;

pub use client::client_key;
pub use proxy::{Cidr, TrustedProxies};
pub use throttle::SignInThrottle;
