# ruff: noqa: E501, W293 - the pages keep the long lines and blank-looking lines of the real ones
"""Realistic captcha, challenge and block pages, as anti-bot vendors serve them.

One place for the page bodies that `urlcheck.detection` must recognise: the demo site answers them
(``/captcha/<name>``, ``/by-client``) and tests/test_detection.py checks each one. They are
shortened copies of the real pages' structure: the titles, element ids, script sources and
headers that identify them are the real ones; ids, keys, rays and addresses are made up
(addresses from the 203.0.113.0/24 documentation range).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DOWN_PAGES", "NORMAL_PAGE", "PAGES", "DemoPage", "down_page"]

HTML = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class DemoPage:
    """A response to serve, and what `urlcheck.detection.detect` should say about it."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    kind: Literal["captcha", "block"]
    vendor: str | None
    signature: str  # the detection signature that recognises it

    def header_map(self) -> dict[str, str]:
        """The headers as `detect` takes them: lower-case names, repeated ones joined by newlines."""
        joined: dict[str, str] = {}
        for name, value in self.headers:
            key = name.lower()
            joined[key] = f"{joined[key]}\n{value}" if key in joined else value
        return joined


def _page(
    status: int,
    body: str,
    kind: Literal["captcha", "block"],
    vendor: str | None,
    signature: str,
    *headers: tuple[str, str],
) -> DemoPage:
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers = (("Content-Type", HTML), *headers)
    return DemoPage(status, headers, body.encode(), kind, vendor, signature)


# Cloudflare's error pages share one template: the head, and the footer with the Ray ID.
_CLOUDFLARE_HEADERS = (("Server", "cloudflare"), ("CF-RAY", "8a1b2c3d4e5f6789-FRA"))
_CLOUDFLARE_ERROR_TOP = """<!DOCTYPE html>
<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->
<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->
<head>
"""
_CLOUDFLARE_FOOTER_TOP = """<div class="cf-error-footer cf-wrapper w-240 lg:w-full py-10 sm:py-4 sm:px-8 mx-auto text-center sm:text-left border-solid border-0 border-t border-gray-300">
<p class="text-13">
<span class="cf-footer-item sm:block sm:mb-1">Cloudflare Ray ID: <strong class="font-semibold">8a1b2c3d4e5f6789</strong></span>
"""
_CLOUDFLARE_FOOTER_BOTTOM = """<span class="cf-footer-item sm:block sm:mb-1"><span>Performance &amp; security by</span> <a rel="noopener noreferrer" href="https://www.cloudflare.com/5xx-error-landing" id="brand_link" target="_blank">Cloudflare</a></span>
</p>
</div>
</div>
</div>
</body>
</html>
"""


def _cloudflare_block(page: str, footer: str = "") -> DemoPage:
    """A 403 on Cloudflare's error template: `page` from the <title> to the end of the error
    details, and `footer` between the footer's Ray ID and its "Performance & security" line."""
    body = (
        _CLOUDFLARE_ERROR_TOP + page + _CLOUDFLARE_FOOTER_TOP + footer + _CLOUDFLARE_FOOTER_BOTTOM
    )
    return _page(403, body, "block", "cloudflare", "cloudflare-block", *_CLOUDFLARE_HEADERS)


CLOUDFLARE_CHALLENGE = _page(
    403,
    """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title><meta http-equiv="Content-Type" content="text/html; charset=UTF-8"><meta http-equiv="X-UA-Compatible" content="IE=Edge"><meta name="robots" content="noindex,nofollow"><meta name="viewport" content="width=device-width,initial-scale=1"><style>*{box-sizing:border-box;margin:0;padding:0}html{line-height:1.15;-webkit-text-size-adjust:100%;color:#313131}</style><meta http-equiv="refresh" content="390"></head><body class="no-js"><div class="main-wrapper" role="main"><div class="main-content"><noscript><div id="challenge-error-title"><div class="h2"><span class="icon-wrapper"><div class="heading-icon warning-icon"></div></span><span id="challenge-error-text">Enable JavaScript and cookies to continue</span></div></div></noscript></div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone: "shop.example.com",cType: 'managed',cRay: '8a1b2c3d4e5f6789',cH: 'Xq2.Lr9kz0aBcD',cUPMDTk: "\\/?__cf_chl_tk=Qm1hZGUgdXA-1714557600-0.0.1.1-1234",cFPWv: 'b',cITimeS: '1714557600',cTTimeMs: '1000',cMTimeMs: '390000',cTplC: 0,cTplV: 5,cTplB: 'cf',cK: "",fa: "\\/?__cf_chl_f_tk=Qm1hZGUgdXA-1714557600-0.0.1.1-1234",md: "bWFkZSB1cA",mdrd: "bWFkZSB1cA",cRq: {ru: 'aHR0cHM6Ly9zaG9wLmV4YW1wbGUuY29tLw==',ra: 'TW96aWxsYS81LjA=',d: 'bWFkZSB1cA==',t: 'MTcxNDU1NzYwMC4wMDAwMDA=',m: 'bWFkZSB1cA=',i1: 'bWFkZSB1cA==',i2: 'bWFkZSB1cA==',zh: 'bWFkZSB1cA==',uh: 'bWFkZSB1cA==',hh: 'bWFkZSB1cA==',}};var cpo = document.createElement('script');cpo.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8a1b2c3d4e5f6789';window._cf_chl_opt.cOgUHash = location.hash === '' && location.href.indexOf('#') !== -1 ? '#' : location.hash;window._cf_chl_opt.cOgUQuery = location.search === '' && location.href.slice(0, location.href.length - window._cf_chl_opt.cOgUHash.length).indexOf('?') !== -1 ? '?' : location.search;if (window.history && window.history.replaceState) {var ogU = location.pathname + window._cf_chl_opt.cOgUQuery + window._cf_chl_opt.cOgUHash;history.replaceState(null, null, "\\/?__cf_chl_rt_tk=Qm1hZGUgdXA-1714557600-0.0.1.1-1234" + window._cf_chl_opt.cOgUHash);cpo.onload = function() {history.replaceState(null, null, ogU);}}document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>""",
    "captcha",
    "cloudflare",
    "cloudflare-challenge",
    *_CLOUDFLARE_HEADERS,
    ("cf-mitigated", "challenge"),
    ("Cache-Control", "private, max-age=0, no-store, no-cache, must-revalidate"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("X-Frame-Options", "SAMEORIGIN"),
)

TURNSTILE = _page(
    200,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Security check | Example Forum</title>
<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer></script>
</head>
<body>
<main class="gate">
<h1>One more step</h1>
<p>We need to check that this request comes from a person before showing the forum.</p>
<form action="/gate/verify" method="POST">
<input type="hidden" name="next" value="/threads/12345">
<div class="cf-turnstile" data-sitekey="0x4AAAAAAAMadeUpKey1234" data-callback="gatePassed"></div>
<noscript>Please enable JavaScript to continue.</noscript>
</form>
</main>
</body>
</html>
""",
    "captcha",
    "cloudflare",
    "turnstile",
)

RECAPTCHA = _page(
    200,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Security Check</title>
<meta name="robots" content="noindex, nofollow">
<script src="https://www.google.com/recaptcha/api.js" async defer></script>
<style>body{font-family:Arial,Helvetica,sans-serif;text-align:center;margin-top:10%}</style>
</head>
<body>
<h2>Please complete the security check to continue</h2>
<p>Requests from your network look automated.</p>
<form id="challenge-form" action="/__verify?return=%2Fcatalog%2Fitem%2F4711" method="post">
<div class="g-recaptcha" data-sitekey="6LcMadeUpSiteKeyForTestsOnly0000000000" data-callback="onPass"></div>
<input type="submit" value="Continue">
</form>
<script>function onPass(){document.getElementById('challenge-form').submit();}</script>
</body>
</html>
""",
    "captcha",
    "google",
    "recaptcha",
)

HCAPTCHA = _page(
    403,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Verification required</title>
<script src="https://js.hcaptcha.com/1/api.js" async defer></script>
</head>
<body>
<div class="box">
<p>Solve the challenge below to continue to tickets.example.com.</p>
<form method="POST" action="/challenge/submit">
<div class="h-captcha" data-sitekey="10000000-ffff-ffff-ffff-000000000001"></div>
<button type="submit">Continue</button>
</form>
</div>
</body>
</html>
""",
    "captcha",
    "hcaptcha",
    "hcaptcha",
)

DDOS_GUARD = _page(
    403,
    """<!DOCTYPE html>
<html>
<head>
<title>DDoS-Guard</title>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<script src="/.well-known/ddos-guard/js-challenge/index.js"></script>
</head>
<body>
<div id="ddg-l10n-title">Checking your browser before accessing shop.example.com</div>
<div id="ddg-l10n-description">This process is automatic. Your browser will redirect to your requested content shortly.</div>
<noscript>Please enable JavaScript and cookies to continue.</noscript>
</body>
</html>
""",
    "captcha",
    "ddos-guard",
    "ddos-guard",
    ("Server", "ddos-guard"),
)

DATADOME = _page(
    403,
    """<html lang="en"><head><title>shop.example.com</title><style>#cmsg{animation: A 1.5s;}@keyframes A{0%{opacity:0;}99%{opacity:0;}100%{opacity:1;}}</style></head><body style="margin:0"><p id="cmsg">Please enable JS and disable any ad blocker</p><script data-cfasync="false">var dd={'rt':'c','cid':'AHrlqAAAAAMAMadeUpCid0000000000==','hsh':'2211F522B61E269B869FA6EAFFB5E1','t':'fe','s':17434,'e':'b7c0a1d2e3f4a5b6c7d8e9f0a1b2c3d4','host':'geo.captcha-delivery.com','cookie':'MadeUpDataDomeCookieValue0000'}</script><script data-cfasync="false" src="https://ct.captcha-delivery.com/c.js"></script></body></html>
""",
    "captcha",
    "datadome",
    "datadome",
    ("X-DataDome", "protected"),
    ("X-DD-B", "1"),
    (
        "Set-Cookie",
        "datadome=MadeUpDataDomeCookieValue0000; Max-Age=31536000; Domain=.example.com;"
        " Path=/; Secure; SameSite=Lax",
    ),
)

DATADOME_BANNED = _page(
    403,
    DATADOME.body.decode().replace("'t':'fe'", "'t':'bv'"),
    "block",
    "datadome",
    "datadome-banned",
    *DATADOME.headers[1:],
)

PERIMETERX = _page(
    403,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="px-captcha">
<title>Access to this page has been denied</title>
</head>
<body>
<section class="container">
<div class="page-title-wrapper"><div class="page-title"><h1>Access to this page has been denied</h1></div></div>
<div class="content-wrapper"><div class="content">
<div id="px-captcha"></div>
<p>Press &amp; Hold to confirm you are<br>a human (and not a bot).</p>
</div></div>
<div class="page-footer-wrapper"><div class="page-footer"><p>Reference ID 0a1b2c3d-0000-11ef-8f5e-6a7b8c9d0e1f</p></div></div>
</section>
<script>
window._pxAppId = 'PXmAdEuP01';
window._pxJsClientSrc = '/mAdEuP01/init.js';
window._pxFirstPartyEnabled = true;
window._pxVid = '';
window._pxUuid = '0a1b2c3d-0000-11ef-8f5e-6a7b8c9d0e1f';
window._pxHostUrl = '/mAdEuP01/xhr';
</script>
<script src="https://captcha.px-cdn.net/PXmAdEuP01/captcha.js?a=c&amp;u=0a1b2c3d-0000-11ef-8f5e-6a7b8c9d0e1f&amp;v=&amp;m=0"></script>
</body>
</html>
""",
    "captcha",
    "perimeterx",
    "perimeterx",
)

AWS_WAF_CAPTCHA = _page(
    405,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title></title>
<style>#captcha-container{margin:auto;max-width:320px}</style>
<script>
window.awsWafCookieDomainList = [];
window.gokuProps = {"key":"AQIDAHjcYu/MadeUpKey==","iv":"MadeUpIv==","context":"MadeUpContext=="};
</script>
<script src="https://0a1b2c3d4e5f.edge.captcha-sdk.awswaf.com/0a1b2c3d4e5f/jsapi.js"></script>
</head>
<body>
<div id="captcha-container"></div>
<script>
window.addEventListener("load", function() {
  const container = document.querySelector("#captcha-container");
  CaptchaScript.renderCaptcha(container, async (voucher) => {
    await ChallengeScript.submitCaptcha(voucher);
    window.location.reload(true);
  });
});
</script>
<noscript><h1>JavaScript is disabled</h1>In order to continue, you need to verify that you're not a robot by solving a CAPTCHA puzzle. The CAPTCHA puzzle requires JavaScript. Enable JavaScript and then reload the page.</noscript>
</body>
</html>
""",
    "captcha",
    "aws",
    "aws-waf-captcha",
    ("x-amzn-waf-action", "captcha"),
    ("Cache-Control", "no-store, max-age=0"),
)

GOOGLE_SORRY = _page(
    429,
    """<html>
<head><meta http-equiv="content-type" content="text/html; charset=utf-8"><meta name="viewport" content="initial-scale=1"><title>https://www.google.com/search?q=urlcheck</title></head>
<body style="font-family: arial, sans-serif; background-color: #fff; color: #000; padding:20px; font-size:18px;" onload="e=document.getElementById('captcha');if(e){e.focus();}">
<div style="max-width:400px;">
<hr noshade size="1" style="color:#ccc; background-color:#ccc;"><br>
<form id="captcha-form" action="index" method="post">
<noscript><div style="font-size:13px;">In order to continue, please enable javascript on your web browser.</div></noscript>
<script src="https://www.google.com/recaptcha/api.js" async defer></script>
<script>var submitCallback = function(response) {document.getElementById('captcha-form').submit();};</script>
<div id="recaptcha" class="g-recaptcha" data-sitekey="6LcMadeUpSorryKey000000000000000000000" data-callback="submitCallback" data-s="MadeUp"></div>
<input type='hidden' name='q' value='MadeUpQ'><input type="hidden" name="continue" value="https://www.google.com/search?q=urlcheck">
</form>
<hr noshade size="1" style="color:#ccc; background-color:#ccc;">
<div style="font-size:13px;">
<b>About this page</b><br><br>
Our systems have detected unusual traffic from your computer network.  This page checks to see if it&#39;s really you sending the requests, and not a robot.  <a href="#" onclick="document.getElementById('infoDiv').style.display='block';">Why did this happen?</a><br><br>
<div id="infoDiv" style="display:none; background-color:#eee; padding:10px; margin:0 0 15px 0; line-height:1.4em;">
This page appears when Google automatically detects requests coming from your computer network which appear to be in violation of the <a href="//www.google.com/policies/terms/">Terms of Service</a>. The block will expire shortly after those requests stop.
</div>
IP address: 203.0.113.7<br>Time: 2024-05-01T10:00:00Z<br>URL: https://www.google.com/search?q=urlcheck<br>
</div>
</div>
</body>
</html>
""",
    "captcha",
    "google",
    "google-sorry",
)

HUMAN_CHECK = _page(
    200,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Example Store</title>
<link rel="stylesheet" href="/static/gate.css">
</head>
<body>
<div class="a-container">
<h4>Please verify you are a human</h4>
<p class="a-last">Sorry, we just need to make sure you&#39;re not a robot. For best results, please make sure your browser is accepting cookies.</p>
<form method="get" action="/errors/validateCaptcha" name="">
<input type=hidden name="amzn" value="MadeUpToken=="><input type=hidden name="amzn-r" value="&#047;dp&#047;B000000000">
<h4>Type the characters you see in this image:</h4>
<img src="/captcha/images/MadeUp.jpg">
<input autocomplete="off" spellcheck="false" placeholder="Type characters" id="captchacharacters" name="field-keywords" type="text">
<button type="submit">Continue shopping</button>
</form>
</div>
</body>
</html>
""",
    "captcha",
    None,
    "human-check",
)

AKAMAI = _page(
    403,
    """<HTML><HEAD>
<TITLE>Access Denied</TITLE>
</HEAD><BODY>
<H1>Access Denied</H1>
 
You don't have permission to access "http&#58;&#47;&#47;www&#46;example&#46;com&#47;products&#47;4711" on this server.<P>
Reference&#32;&#35;18&#46;2f1c3e17&#46;1714557600&#46;9a8b7c6
<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;18&#46;2f1c3e17&#46;1714557600&#46;9a8b7c6</P>
</BODY>
</HTML>
""",
    "block",
    "akamai",
    "akamai",
    ("Content-Type", "text/html"),
    ("Server", "AkamaiGHost"),
    ("Mime-Version", "1.0"),
    ("Expires", "Wed, 01 May 2024 10:00:00 GMT"),
)

CLOUDFLARE_1020 = _cloudflare_block(
    """<title>Access denied | shop.example.com used Cloudflare to restrict access</title>
<meta charset="UTF-8" />
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
<meta name="robots" content="noindex, nofollow" />
<link rel="stylesheet" id="cf_styles-css" href="/cdn-cgi/styles/main.css" />
</head>
<body>
<div id="cf-wrapper">
<div class="cf-alert cf-alert-error cf-cookie-error hidden" id="cookie-alert" data-translate="enable_cookies">Please enable cookies.</div>
<div id="cf-error-details" class="p-0">
<header class="mx-auto pt-10 lg:pt-6 lg:px-8 w-240 lg:w-full mb-15 antialiased">
<h1 class="inline-block md:block mr-2 md:mb-2 font-light text-60 md:text-3xl text-black-dark leading-tight">
<span data-translate="error">Error</span>
<span>1020</span>
</h1>
<span class="inline-block md:block heading-ray-id font-mono text-15 lg:text-sm lg:leading-relaxed">Ray ID: 8a1b2c3d4e5f6789 &bull;</span>
<span class="inline-block md:block heading-ray-id font-mono text-15 lg:text-sm lg:leading-relaxed">2024-05-01 10:00:00 UTC</span>
<h2 class="text-gray-600 leading-1.3 text-3xl lg:text-2xl font-light">Access denied</h2>
</header>
<section class="w-240 lg:w-full mx-auto mb-8 lg:px-8">
<div id="what-happened-section" class="w-1/2 md:w-full">
<h2 class="text-3xl leading-tight font-normal mb-4 text-black-dark antialiased" data-translate="what_happened">What happened?</h2>
<p>This website is using a security service to protect itself from online attacks.</p>
</div>
</section>
""",
    """<span class="cf-footer-separator sm:hidden">&bull;</span>
<span id="cf-footer-item-ip" class="cf-footer-item hidden sm:block sm:mb-1">Your IP: <span class="hidden" id="cf-footer-ip">203.0.113.7</span></span>
<span class="cf-footer-separator sm:hidden">&bull;</span>
""",
)

CLOUDFLARE_WAF_BLOCK = _cloudflare_block(
    """<title>Attention Required! | Cloudflare</title>
<meta charset="UTF-8" />
<meta name="robots" content="noindex, nofollow" />
<link rel="stylesheet" id="cf_styles-css" href="/cdn-cgi/styles/cf.errors.css" />
</head>
<body>
<div id="cf-wrapper">
<div class="cf-alert cf-alert-error cf-cookie-error" id="cookie-alert" data-translate="enable_cookies">Please enable cookies.</div>
<div id="cf-error-details" class="cf-error-details-wrapper">
<div class="cf-wrapper cf-header cf-error-overview">
<h1 data-translate="block_headline">Sorry, you have been blocked</h1>
<h2 class="cf-subheadline"><span data-translate="unable_to_access">You are unable to access</span> shop.example.com</h2>
</div>
<div class="cf-section cf-wrapper">
<div class="cf-columns two">
<div class="cf-column">
<h2 data-translate="blocked_why_headline">Why have I been blocked?</h2>
<p data-translate="blocked_why_detail">This website is using a security service to protect itself from online attacks. The action you just performed triggered the security solution.</p>
</div>
</div>
</div>
""",
)

IMPERVA = _page(
    403,
    """<html style="height:100%"><head><META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW"><meta name="format-detection" content="telephone=no"><meta name="viewport" content="initial-scale=1.0"><meta http-equiv="X-UA-Compatible" content="IE=edge,chrome=1"></head><body style="margin:0px;height:100%"><iframe id="main-iframe" src="/_Incapsula_Resource?CWUDNSAI=24&xinfo=5-12345678-0%200NNN%20RT%281714557600000%2012%29%20q%280%20-1%20-1%200%29%20r%280%20-1%29%20B12%284%2c315%2c0%29%20U18&incident_id=1234000670123456789-123456789012345678&edet=12&cinfo=04000000&rpinfo=0&mth=GET" frameborder=0 width="100%" height="100%" marginheight="0px" marginwidth="0px">Request unsuccessful. Incapsula incident ID: 1234000670123456789-123456789012345678</iframe></body></html>""",
    "block",
    "imperva",
    "imperva",
    ("X-CDN", "Imperva"),
    ("X-Iinfo", "5-12345678-0 0NNN RT(1714557600000 12) q(0 -1 -1 0) r(0 -1) B12(4,315,0) U18"),
)

SUCURI = _page(
    403,
    """<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
<meta name="robots" content="noindex" />
<title>Sucuri WebSite Firewall - Access Denied</title>
<link rel="stylesheet" href="https://cdn.sucuri.net/sucuri-firewall-block.css" />
</head>
<body>
<div id="main-container">
<header class="app-header clearfix">
<div class="wrap"><span class="site-link"><span class="logo sucuri-logo"></span></span><span class="logo-neartext">Website Firewall</span></div>
</header>
<section class="app-content access-denied clearfix"><div class="box center width-max-940"><h1 class="brand-font font-size-xtra no-margin"><i class="icon-circle-red"></i>Access Denied - Sucuri Website Firewall</h1>
<p class="medium-text code-snippet">If you are the site owner (or you manage this site), please whitelist your IP or if you think this block is an error please <a href="https://support.sucuri.net/" class="color-green underline">open a support ticket</a> and make sure to include the block details (displayed in the box below), so we can assist you in troubleshooting the issue. </p><h2>Block details:</h2>
<table class="property-table overflow-break-all line-height-16">
<tr><td>Your IP:</td><td><span>203.0.113.7</span></td></tr>
<tr><td><span>URL:</span></td><td><span>www.example.com/</span></td></tr>
<tr><td><span>Block ID:</span></td><td><span>BNP005</span></td></tr>
<tr><td><span>Block reason:</span></td><td><span>Bad bot access attempt.</span></td></tr>
</table>
</div></section>
</div>
</body>
</html>
""",
    "block",
    "sucuri",
    "sucuri",
    ("Server", "Sucuri/Cloudproxy"),
    ("X-Sucuri-ID", "11005"),
)

CLOUDFRONT_BLOCK = _page(
    403,
    """<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<HTML><HEAD><META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=iso-8859-1">
<TITLE>ERROR: The request could not be satisfied</TITLE>
</HEAD><BODY>
<H1>403 ERROR</H1>
<H2>The request could not be satisfied.</H2>
<HR noshade size="1px">
Request blocked.
We can't connect to the server for this app or website at this time. There might be too much traffic or a configuration error. Try again later, or contact the app or website owner.
<BR clear="all">
If you provide content to customers through CloudFront, you can find steps to troubleshoot and help prevent this error by reviewing the CloudFront documentation.
<BR clear="all">
<HR noshade size="1px">
<PRE>
Generated by cloudfront (CloudFront)
Request ID: MadeUpRequestId0000000000000000000000000000000000000==
</PRE>
<ADDRESS>
</ADDRESS>
</BODY></HTML>""",
    "block",
    "aws",
    "cloudfront-block",
    ("Content-Type", "text/html"),
    ("Server", "CloudFront"),
    ("X-Cache", "Error from cloudfront"),
    ("X-Amz-Cf-Pop", "FRA56-P1"),
    ("X-Amz-Cf-Id", "MadeUpRequestId0000000000000000000000000000000000000=="),
)

WORDFENCE = _page(
    503,
    """<!DOCTYPE html>
<html>
<head>
<title>Your access to this site has been limited by the site owner</title>
<meta name="robots" content="noindex, nofollow">
</head>
<body>
<div class="container">
<h1>Your access to this site has been limited by the site owner</h1>
<p>Your access to this service has been limited. (HTTP response code 503)</p>
<p>If you think you have been blocked in error, contact the owner of this site for assistance.</p>
<h2>Block Technical Data</h2>
<table border="0" cellspacing="0" cellpadding="0" class="block-data">
<tr><th class="reason">Block Reason:</th><td class="reason">Access from your area has been temporarily limited for security reasons.</td></tr>
<tr><th class="time">Time:</th><td class="time">Wed, 1 May 2024 10:00:00 GMT</td></tr>
</table>
<p class="about-text">About Wordfence</p>
<p class="generated">Generated by Wordfence at Wed, 1 May 2024 10:00:00 GMT.<br>Your computer&#039;s time: <script type="application/javascript">document.write(new Date().toUTCString());</script>.</p>
</div>
</body>
</html>
""",
    "block",
    "wordfence",
    "wordfence",
)

BLOCK_403 = _page(
    403,
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Access denied</title>
</head>
<body>
<h1>Access denied</h1>
<p>Your IP address has been blocked by this site's security policy.</p>
<p>If you believe this is a mistake, contact support and quote request ID 7c9e6679-7425-40de-944b-e07fc1f90ae7.</p>
</body>
</html>
""",
    "block",
    None,
    "block-page",
)

PAGES: dict[str, DemoPage] = {
    "cloudflare": CLOUDFLARE_CHALLENGE,
    "ddos-guard": DDOS_GUARD,
    "turnstile": TURNSTILE,
    "recaptcha": RECAPTCHA,
    "hcaptcha": HCAPTCHA,
    "datadome": DATADOME,
    "datadome-banned": DATADOME_BANNED,
    "perimeterx": PERIMETERX,
    "aws-waf": AWS_WAF_CAPTCHA,
    "google-sorry": GOOGLE_SORRY,
    "human-check": HUMAN_CHECK,
    "akamai": AKAMAI,
    "cloudflare-1020": CLOUDFLARE_1020,
    "cloudflare-block": CLOUDFLARE_WAF_BLOCK,
    "imperva": IMPERVA,
    "sucuri": SUCURI,
    "cloudfront": CLOUDFRONT_BLOCK,
    "wordfence": WORDFENCE,
    "block403": BLOCK_403,
}
"""Every challenge page by the name the demo site serves it under (``/captcha/<name>``)."""

NORMAL_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="index, follow">
<title>Spring catalogue | Example Shop</title>
<link rel="canonical" href="/catalogue/spring">
<script src="https://www.google.com/recaptcha/api.js?render=6LcMadeUpV3Key0000000000000000000000000"></script>
</head>
<body>
<header><nav><a href="/">Home</a> <a href="/catalogue">Catalogue</a> <a href="/contact">Contact</a></nav></header>
<main>
<h1>Spring catalogue</h1>
<p>Twelve new lines this season. Orders ship within two working days.</p>
<ul class="products"><li>Linen shirt</li><li>Canvas shoes</li><li>Straw hat</li></ul>
<form id="newsletter" action="/newsletter" method="post">
<input type="email" name="email" placeholder="you@example.com">
<input type="hidden" name="g-recaptcha-response" id="g-recaptcha-response">
<button type="submit">Subscribe</button>
</form>
</main>
<footer><p>&copy; 2024 Example Shop</p></footer>
<script>(function(){function c(){var b=a.contentDocument||a.contentWindow.document;if(b){var d=b.createElement('script');d.innerHTML="window.__CF$cv$params={r:'8a1b2c3d4e5f6789',t:'MTcxNDU1NzYwMC4wMDAwMDA='};var a=document.createElement('script');a.nonce='';a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';document.getElementsByTagName('head')[0].appendChild(a);";b.getElementsByTagName('head')[0].appendChild(d)}}if(document.body){var a=document.createElement('iframe');a.height=1;a.width=1;a.style.position='absolute';a.style.top=0;a.style.left=0;a.style.border='none';a.style.visibility='hidden';document.body.appendChild(a);c()}})();</script>
</body>
</html>
"""
"""A normal page of a protected shop: it carries Cloudflare's passive bot script and a reCAPTCHA v3
newsletter form, as many real pages do, and is not a challenge."""

DOWN_PAGES: dict[int, bytes] = {
    502: b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n",
    503: b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    b"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n"
    b"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
}
"""nginx's own error pages, as a site that is down for everyone answers."""


def down_page(status: int) -> bytes:
    """nginx's page for `status` (a generic one for codes nginx has no page for here)."""
    if status in DOWN_PAGES:
        return DOWN_PAGES[status]
    return (
        f"<html>\r\n<head><title>{status} Error</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()
