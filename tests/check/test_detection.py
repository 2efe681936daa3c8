"""Captcha and block detection, signature by signature, on pages shaped like the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from urlcheck.check.detection import (
    NOT_DETECTED,
    SCAN_BYTES,
    SIGNATURES,
    Detection,
    detect,
    header_map,
)
from urlcheck.demo.pages import DOWN_PAGES, NORMAL_PAGE, PAGES, DemoPage

DOCS = Path(__file__).resolve().parents[2] / "docs" / "detection.md"
URL = "https://shop.example.com/catalogue/4711"


def run(page: DemoPage, url: str = URL) -> Detection:
    return detect(page.status, page.header_map(), page.body, url)


def html(title: str, body: str, head: str = "") -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{head}</head>\n<body>\n{body}\n</body>\n</html>\n"
    ).encode()


# A long normal page: articles and shop pages are tens of KB, challenge pages a few.
FILLER = "".join(
    f'<div class="teaser"><h3><a href="/news/{i}">Story number {i}</a></h3>'
    f"<p>Council approves the budget for new cycle lanes along the river, item {i}.</p></div>\n"
    for i in range(300)
)


# --- every realistic page, one test each ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_vendor_page_is_recognised(name: str) -> None:
    page = PAGES[name]
    assert run(page) == Detection(page.kind, page.vendor, page.signature)


def test_every_signature_has_a_page_and_a_docstring() -> None:
    names = [s.name for s in SIGNATURES]
    assert len(names) == len(set(names))
    assert {s.name for s in SIGNATURES} == {p.signature for p in PAGES.values()}
    for signature in SIGNATURES:
        assert len(signature.doc) > 40, signature.name


def test_docs_list_every_signature() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for signature in SIGNATURES:
        assert f"`{signature.name}`" in text, signature.name


# --- Cloudflare challenge -----------------------------------------------------------------------


def test_cloudflare_challenge_by_header_alone() -> None:
    found = detect(403, {"cf-mitigated": "challenge", "server": "cloudflare"}, b"", URL)
    assert found == Detection("captcha", "cloudflare", "cloudflare-challenge")


@pytest.mark.parametrize(
    "body",
    [
        html("Just a moment...", "<noscript>Enable JavaScript and cookies to continue</noscript>"),
        b"<html><body><script>(function(){window._cf_chl_opt={cvId: '3',cType: 'managed'};"
        b"})();</script></body></html>",
        b"<html><body><script>var cpo=document.createElement('script');cpo.src='/cdn-cgi/"
        b"challenge-platform/h/g/orchestrate/chl_page/v1?ray=8a1b2c3d4e5f6789';</script></body>",
    ],
    ids=["title", "chl-opt", "orchestrate-script"],
)
def test_cloudflare_challenge_by_each_body_marker_without_the_header(body: bytes) -> None:
    assert detect(403, {"server": "cloudflare"}, body, URL).signature == "cloudflare-challenge"


def test_cloudflare_legacy_under_attack_page() -> None:
    body = html(
        "Just a moment please...",
        '<h1><span data-translate="checking_browser">Checking your browser before accessing</span>'
        " shop.example.com.</h1>\n"
        '<form id="challenge-form" action="/?__cf_chl_jschl_tk__=MadeUp" method="POST">\n'
        '<input type="hidden" name="jschl_vc" value="0123456789abcdef"/>\n'
        '<input type="hidden" id="jschl-answer" name="jschl_answer"/>\n</form>',
    )
    assert detect(503, {"server": "cloudflare"}, body, URL).signature == "cloudflare-challenge"


def test_cloudflare_passive_script_on_a_normal_page_is_not_a_challenge() -> None:
    assert b"/cdn-cgi/challenge-platform/scripts/jsd/main.js" in NORMAL_PAGE
    headers = {"server": "cloudflare", "cf-ray": "8a1b2c3d4e5f6789-FRA"}
    assert detect(200, headers, NORMAL_PAGE, URL) == NOT_DETECTED
    assert detect(404, headers, NORMAL_PAGE, URL) == NOT_DETECTED


# --- widgets: Turnstile, reCAPTCHA, hCaptcha ----------------------------------------------------

TURNSTILE_LOGIN = html(
    "Sign in | Example Forum",
    '<h1>Sign in</h1><form method="post" action="/login"><input name="user"><input '
    'type="password" name="pass"><div class="cf-turnstile" data-sitekey="0x4AAAAAAAMadeUp"></div>'
    "<button>Sign in</button></form>",
    '<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer></script>\n',
)


def test_turnstile_on_a_login_form_is_not_a_challenge_but_on_a_403_it_is() -> None:
    assert detect(200, {}, TURNSTILE_LOGIN, URL) == NOT_DETECTED
    assert detect(403, {}, TURNSTILE_LOGIN, URL).signature == "turnstile"


RECAPTCHA_CONTACT = html(
    "Contact us | Example Shop",
    '<h1>Contact us</h1><form method="post" action="/contact"><textarea name="message"></textarea>'
    '<div class="g-recaptcha" data-sitekey="6LcMadeUp000"></div><button>Send</button></form>',
    '<script src="https://www.google.com/recaptcha/api.js" async defer></script>\n',
)


def test_recaptcha_on_a_contact_form_is_not_a_challenge() -> None:
    assert detect(200, {}, RECAPTCHA_CONTACT, URL) == NOT_DETECTED
    # nor on the site's 404 page built from the same template
    assert detect(404, {}, RECAPTCHA_CONTACT, URL) == NOT_DETECTED


@pytest.mark.parametrize(
    "script",
    [
        "https://www.google.com/recaptcha/enterprise.js",
        "https://www.recaptcha.net/recaptcha/api.js",
        "https://www.google.com/recaptcha/api.js?onload=ready&render=explicit",
    ],
)
def test_recaptcha_scripts_on_a_429(script: str) -> None:
    body = html("Too many requests", "<div id='gate'></div>", f'<script src="{script}"></script>\n')
    assert detect(429, {}, body, URL) == Detection("captcha", "google", "recaptcha")


def test_recaptcha_v3_score_script_is_not_a_challenge_even_on_a_403() -> None:
    body = html(
        "403 Forbidden",
        "<h1>Forbidden</h1><p>This page is for members only.</p>",
        '<script src="https://www.google.com/recaptcha/api.js?render=6LcMadeUp000"></script>\n',
    )
    assert detect(403, {}, body, URL) == NOT_DETECTED


def test_hcaptcha_on_a_signup_form_is_not_a_challenge_but_titled_as_a_check_it_is() -> None:
    form = '<form><div class="h-captcha" data-sitekey="10000000-ffff"></div></form>'
    script = '<script src="https://js.hcaptcha.com/1/api.js" async defer></script>\n'
    assert detect(200, {}, html("Create your account", form, script), URL) == NOT_DETECTED
    found = detect(200, {}, html("Human verification", form, script), URL)
    assert found == Detection("captcha", "hcaptcha", "hcaptcha")


# --- DataDome ------------------------------------------------------------------------------------


def test_datadome_403_recognised_by_its_header_or_cookie_alone() -> None:
    assert detect(403, {"x-datadome": "protected"}, b"", URL).signature == "datadome"
    cookie = {"set-cookie": "session=1; Path=/\ndatadome=MadeUp; Max-Age=31536000; Path=/"}
    assert detect(403, cookie, b"", URL).signature == "datadome"


def test_datadome_protected_site_normal_page_is_not_a_captcha() -> None:
    headers = {"x-datadome": "protected", "set-cookie": "datadome=MadeUp; Path=/; Secure"}
    body = html(
        "Spring catalogue",
        "<h1>Spring catalogue</h1>",
        '<script src="https://js.datadome.co/tags.js" async></script>\n',
    )
    assert detect(200, headers, body, URL) == NOT_DETECTED


def test_datadome_json_answer_with_banned_visitor() -> None:
    body = (
        b'{"url":"https://geo.captcha-delivery.com/captcha/?initialCid=MadeUp&hash=MadeUp'
        b'&cid=MadeUp&t=bv&referer=https%3A%2F%2Fshop.example.com%2F&s=17434&e=MadeUp"}'
    )
    found = detect(403, {"content-type": "application/json"}, body, URL)
    assert found == Detection("block", "datadome", "datadome-banned")


# --- PerimeterX, AWS WAF, Google ------------------------------------------------------------------


def test_perimeterx_press_and_hold_text_alone() -> None:
    body = html(
        "Access to this page has been denied", "<p>Press &amp; Hold to confirm you are a human</p>"
    )
    assert detect(403, {}, body, URL).signature == "perimeterx"


def test_perimeterx_sensor_on_a_normal_page_is_not_a_captcha() -> None:
    body = html(
        "Spring catalogue",
        "<h1>Spring catalogue</h1><script>window._pxAppId = 'PXmAdEuP01';</script>",
        '<script src="//client.px-cloud.net/PXmAdEuP01/main.min.js" async></script>\n',
    )
    assert detect(200, {}, body, URL) == NOT_DETECTED


def test_aws_waf_challenge_header_on_a_202() -> None:
    found = detect(202, {"x-amzn-waf-action": "challenge"}, b"", URL)
    assert found == Detection("captcha", "aws", "aws-waf-captcha")


def test_aws_waf_interstitial_without_the_header() -> None:
    body = PAGES["aws-waf"].body
    assert detect(405, {"content-type": "text/html"}, body, URL).signature == "aws-waf-captcha"


def test_aws_waf_token_integration_on_a_normal_page_is_not_a_captcha() -> None:
    body = html(
        "Spring catalogue",
        "<h1>Spring catalogue</h1>",
        '<script src="https://0a1b2c3d4e5f.edge.sdk.awswaf.com/0a1b2c3d4e5f/challenge.js" defer>'
        "</script>\n",
    )
    assert detect(200, {}, body, URL) == NOT_DETECTED


def test_google_sorry_by_url_and_by_redirect() -> None:
    sorry = (
        "https://www.google.com/sorry/index?continue=https://www.google.com/search%3Fq%3Dx&q=MadeUp"
    )
    assert detect(429, {}, b"", sorry).signature == "google-sorry"
    found = detect(302, {"location": sorry}, b"", "https://www.google.com/search?q=x")
    assert found == Detection("captcha", "google", "google-sorry")
    assert (
        detect(302, {"location": "https://www.google.com/search?q=sorry"}, b"", URL) == NOT_DETECTED
    )


# --- generic human checks -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "phrase",
    [
        "Verify you are human",
        "Please verify you are a human",
        "Are you a robot?",
        "Sorry, we just need to make sure you're not a robot.",
        "Please complete the security check to access shop.example.com",
    ],
)
def test_human_check_phrases_on_a_short_page_whatever_the_status(phrase: str) -> None:
    body = html("shop.example.com", f"<p>{phrase}</p><form><img src='/captcha.png'></form>")
    for status in (200, 403, 429):
        assert detect(status, {}, body, URL) == Detection("captcha", None, "human-check")


def test_human_check_phrase_in_the_title_of_a_long_page() -> None:
    body = html("Are you a robot? | Example News", FILLER)
    assert len(body) > 16 * 1024
    assert detect(200, {}, body, URL).signature == "human-check"


def test_an_article_about_captchas_is_not_a_captcha() -> None:
    article = html(
        "How websites tell people from bots | Example News",
        "<article><h1>How websites tell people from bots</h1>"
        "<p>Most of us have clicked a box that asks us to verify you are human, or picked the "
        "traffic lights out of a CAPTCHA grid. Sites ask 'are you a robot?' because scrapers "
        "send unusual traffic from your computer network's neighbours...</p>"
        '<p>Google\'s reCAPTCHA v2 shows a widget; <code>class="g-recaptcha"</code> marks it.</p>'
        f"</article>{FILLER}",
    )
    assert len(article) > 16 * 1024
    assert detect(200, {}, article, URL) == NOT_DETECTED


def test_a_page_with_a_robots_meta_tag_is_not_a_captcha() -> None:
    body = html(
        "Spring catalogue",
        "<h1>Spring catalogue</h1><p>Robots welcome: see /robots.txt.</p>",
        '<meta name="robots" content="noindex, nofollow">\n'
        '<meta name="googlebot" content="noarchive">\n',
    )
    assert detect(200, {}, body, URL) == NOT_DETECTED


# --- block pages --------------------------------------------------------------------------------

APACHE_403 = (
    b'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n'
    b"<title>403 Forbidden</title>\n</head><body>\n<h1>Forbidden</h1>\n"
    b"<p>You don't have permission to access this resource.</p>\n"
    b"<hr>\n<address>Apache/2.4.57 (Debian) Server at shop.example.com Port 443</address>\n"
    b"</body></html>\n"
)
NGINX_403 = (
    b"<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n"
    b"<center><h1>403 Forbidden</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


def test_a_plain_403_is_the_sites_own_answer() -> None:
    assert detect(403, {"server": "Apache"}, APACHE_403, URL) == NOT_DETECTED
    assert detect(403, {"server": "nginx"}, NGINX_403, URL) == NOT_DETECTED
    assert detect(403, {}, b"", URL) == NOT_DETECTED


def test_a_404_and_a_site_down_for_everyone_are_not_blocks() -> None:
    assert detect(404, {"server": "nginx"}, NGINX_404, URL) == NOT_DETECTED
    for status, body in DOWN_PAGES.items():
        assert detect(status, {"server": "nginx"}, body, URL) == NOT_DETECTED


def test_akamai_older_page_without_the_edgesuite_link() -> None:
    body = PAGES["akamai"].body.replace(b"<P>https&#58;&#47;&#47;errors", b"<P>gone")
    body = body.replace(b"edgesuite", b"")
    assert detect(403, {"server": "AkamaiGHost"}, body, URL).signature == "akamai"


@pytest.mark.parametrize("code", ["1005", "1006", "1009", "1010", "1012", "1020"])
def test_cloudflare_block_codes_in_the_older_page_layout(code: str) -> None:
    body = html(
        "Access denied | shop.example.com used Cloudflare to restrict access",
        f'<div class="cf-wrapper cf-header cf-error-overview"><h1><span class="cf-error-type" '
        f'data-translate="error">Error</span><span class="cf-error-code">{code}</span></h1>'
        '<h2 class="cf-subheadline" data-translate="error_desc">Access denied</h2></div>',
    )
    assert detect(403, {"server": "cloudflare"}, body, URL).signature == "cloudflare-block"


def test_cloudflare_rate_limit_and_origin_errors_are_not_blocks() -> None:
    rate_limited = PAGES["cloudflare-1020"].body.replace(b"<span>1020</span>", b"<span>1015</span>")
    rate_limited = rate_limited.replace(b">Access denied</h2>", b">You are being rate limited</h2>")
    assert detect(429, {"server": "cloudflare"}, rate_limited, URL) == NOT_DETECTED
    origin_down = html(
        "shop.example.com | 522: Connection timed out",
        '<h1><span class="inline-block">Connection timed out</span><span class="code-label">'
        'Error code 522</span></h1><div class="cf-error-code">522</div>'
        "<p>Performance &amp; security by Cloudflare</p>",
    )
    assert detect(522, {"server": "cloudflare"}, origin_down, URL) == NOT_DETECTED


def test_imperva_sensor_on_a_normal_page_is_not_a_block() -> None:
    body = html(
        "Spring catalogue",
        "<h1>Spring catalogue</h1>",
        '<script src="/_Incapsula_Resource?SWJIYLWA=719d34d31c8e3a6e6fffd425f7e032f3"></script>\n',
    )
    assert detect(200, {"x-cdn": "Imperva"}, body, URL) == NOT_DETECTED


def test_cloudfront_403_without_request_blocked_is_not_a_block() -> None:
    body = PAGES["cloudfront"].body.replace(b"Request blocked.", b"Bad request.")
    assert detect(403, {"server": "CloudFront"}, body, URL) == NOT_DETECTED


@pytest.mark.parametrize(
    "words",
    [
        "Access Denied",
        "Request blocked",
        "Your IP has been blocked",
        "Your IP address has been banned",
    ],
)
def test_generic_block_words_count_on_a_403_only(words: str) -> None:
    body = html("Error", f"<h1>{words}</h1><p>Request ID 7c9e6679</p>")
    assert detect(403, {}, body, URL) == Detection("block", None, "block-page")
    assert detect(200, {}, body, URL) == NOT_DETECTED
    assert detect(404, {}, body, URL) == NOT_DETECTED


def test_a_407_is_left_to_the_caller() -> None:
    page = PAGES["block403"]
    assert detect(407, page.header_map(), page.body, URL) == NOT_DETECTED


# --- mechanics ----------------------------------------------------------------------------------


def test_markers_past_the_scan_window_are_not_seen() -> None:
    padding = b"<!-- " + b"x" * SCAN_BYTES + b" -->"
    late = b"<html><body>" + padding + b'<div id="px-captcha"></div></body></html>'
    assert detect(403, {}, late, URL) == NOT_DETECTED
    assert detect(403, {}, late.replace(padding, b""), URL).signature == "perimeterx"


# Bodies built to make a careless pattern backtrack; bench/detection.py times them (0.5 s bound).
HOSTILE_BODIES = [
    b"<h1 " + b"a" * 250 + b">" + (b"x" * 400 + b"<h2>") * 700,
    b"<title" + b" " * 300_000,
    b'cf-error-code">' + b" " * 300_000,
    (b"<h3>" + b"robot " * 100) * 500,
]


def test_hostile_bodies_are_classified() -> None:
    # None of them is a block page: their tags and words are only there to make work.
    for body in HOSTILE_BODIES:
        for status in (200, 403):
            assert detect(status, {}, body, URL) == NOT_DETECTED


def test_detection_is_falsy_when_nothing_is_found() -> None:
    assert not NOT_DETECTED
    assert Detection("block", None, "block-page")


def test_header_map_from_scrapy_style_pairs() -> None:
    pairs: list[tuple[str | bytes, list[bytes] | str | bytes]] = [
        (b"Set-Cookie", [b"a=1; Path=/", b"datadome=MadeUp; Path=/"]),
        (b"CF-Mitigated", [b"challenge"]),
        ("Server", "cloudflare"),
        ("set-cookie", b"b=2"),
    ]
    headers = header_map(pairs)
    assert headers == {
        "set-cookie": "a=1; Path=/\ndatadome=MadeUp; Path=/\nb=2",
        "cf-mitigated": "challenge",
        "server": "cloudflare",
    }
    assert detect(403, headers, b"", URL).signature == "cloudflare-challenge"
