//! Registers a path with the methods it answers, so that every known path
//! behaves as clients and load balancers expect: `GET` implies `HEAD`
//! (actix-http's codec sends a HEAD answer's headers without its body),
//! `OPTIONS` answers 204 with `Allow` (HAProxy's default check uses it),
//! and any other method gets 405 with `Allow` and the JSON error body.

use std::collections::BTreeMap;
use std::sync::Mutex;

use actix_web::http::Method;
use actix_web::http::header::ALLOW;
use actix_web::{FromRequest, Handler, HttpResponse, Resource, Responder, web};

use super::ApiError;

pub struct Endpoint {
    resource: Resource,
    allow: Vec<Method>,
    /// The path as clients see it (with its scope), for [`registered`].
    full_path: String,
}

/// Every path an [`Endpoint`] registered, with its methods: what a test
/// walks to prove every admin route asks for a token.
static REGISTERED: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());

/// The paths registered so far (every app built in this process), each with
/// the methods it answers besides `OPTIONS`.
pub fn registered() -> Vec<(String, Vec<String>)> {
    REGISTERED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(path, methods)| (path.clone(), methods.clone()))
        .collect()
}

impl Endpoint {
    pub fn new(path: &str) -> Self {
        Self {
            resource: web::resource(path),
            allow: Vec::new(),
            full_path: path.to_owned(),
        }
    }

    /// Inside `web::scope(scope)`: recorded with it.
    pub fn under(mut self, scope: &str) -> Self {
        self.full_path = format!("{scope}{}", self.full_path);
        self
    }

    /// Answers `GET` and `HEAD` with `handler`.
    pub fn get<F, Args>(mut self, handler: F) -> Self
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        self.resource = self
            .resource
            .route(web::get().to(handler.clone()))
            .route(web::head().to(handler));
        self.allow.extend([Method::GET, Method::HEAD]);
        self
    }

    /// Answers `POST` with `handler`.
    pub fn post<F, Args>(mut self, handler: F) -> Self
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        self.resource = self.resource.route(web::post().to(handler));
        self.allow.push(Method::POST);
        self
    }

    /// The resource, with `OPTIONS` and the 405 for every other method.
    pub fn finish(self) -> Resource {
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        let methods = registered.entry(self.full_path.clone()).or_default();
        for method in &self.allow {
            if !methods.iter().any(|m| m == method.as_str()) {
                methods.push(method.as_str().to_owned());
            }
        }
        drop(registered);
        let mut allow: Vec<&str> = self.allow.iter().map(Method::as_str).collect();
        allow.push(Method::OPTIONS.as_str());
        let allow = allow.join(", ");
        let options_allow = allow.clone();
        self.resource
            .route(web::method(Method::OPTIONS).to(move || {
                let allow = options_allow.clone();
                async move {
                    HttpResponse::NoContent()
                        .insert_header((ALLOW, allow))
                        .finish()
                }
            }))
            .default_service(web::to(move || {
                let allow = allow.clone();
                async move { Err::<HttpResponse, _>(ApiError::MethodNotAllowed(allow)) }
            }))
    }
}
