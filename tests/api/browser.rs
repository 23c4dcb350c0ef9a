//! The admin page as a browser uses it: sign in through the form (checking
//! the cookie's attributes), fetch pages (checking the security headers),
//! and post forms with the CSRF token a page carries.

use reqwest::{Response, StatusCode};

use crate::helpers::{ADMIN_TOKEN, TestApp};

/// Logs in through the form; returns the `Cookie` header value.
pub(crate) async fn login(app: &TestApp) -> String {
    login_with(app, ADMIN_TOKEN).await
}

/// [`login`] with another admin token.
pub(crate) async fn login_with(app: &TestApp, token: &str) -> String {
    let response = app
        .client
        .post(app.url("/admin/login"))
        .header("origin", &app.address)
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let set_cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/admin", "Max-Age="] {
        assert!(
            set_cookie.contains(attribute),
            "{attribute} missing: {set_cookie}"
        );
    }
    assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
    set_cookie.split(';').next().unwrap().to_owned()
}

pub(crate) async fn page(app: &TestApp, path: &str, cookie: &str) -> String {
    let response = app
        .client
        .get(app.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'")
    );
    response.text().await.unwrap()
}

/// The CSRF token embedded in a page's forms.
pub(crate) fn csrf_in(html: &str) -> String {
    let marker = r#"name="csrf" value=""#;
    let start = html.find(marker).expect("page has a form") + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

pub(crate) async fn post_form(
    app: &TestApp,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    fields: &[(&str, &str)],
) -> Response {
    let mut request = app
        .client
        .post(app.url(path))
        .header("cookie", cookie)
        .form(fields);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap()
}
