// baton::http::client against real TCP and TLS peers: servers that each test starts in this
// process on 127.0.0.1 (ephemeral ports), on the same io_context as the client. Every wait is
// bounded (run_until against a deadline).
#include <test_common/fixtures.hpp>
#include <test_common/http_server.hpp>
#include <test_common/run_op.hpp>
#include <baton/http/client.hpp>

#include <doctest/doctest.h>
#include <test_common/refused_port.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace bh = baton::http;
using tcp = net::ip::tcp;
using baton::errc;
using baton::error_code;
using namespace std::chrono_literals;

namespace {

// ---- a scripted HTTP server ---------------------------------------------------

using test_common::reply;
using test_common::server_request;
using test_common::server_response;

reply ok(std::string body = "ok", bool keep_alive = true) {
    reply r;
    r.msg.result(bhttp::status::ok);
    r.msg.version(11);
    r.msg.keep_alive(keep_alive);
    r.msg.body() = std::move(body);
    r.msg.prepare_payload();
    return r;
}

reply with_kind(reply::kind_t k) { return test_common::reply_of(k); }

// The suite's server: behaviour per request and connection, stats, TLS; an endpoint for the client.
class test_server : public test_common::http_server {
public:
    using http_server::http_server;
    bh::endpoint ep(bh::scheme s = bh::scheme::http, std::string host = "127.0.0.1") const {
        return bh::endpoint{s, std::move(host), port()};
    }
};

// ---- bounded running -------------------------------------------------------------

using test_common::run_until;

struct outcome {
    error_code ec;
    bh::response res;
    bh::request_info info;
    bool done = false;
};

bh::request get(std::string target = "/") {
    bh::request r{bhttp::verb::get, target, 11};
    return r;
}

// Starts a request; the outcome fills in when its handler runs.
std::shared_ptr<outcome> start(bh::client& c, bh::endpoint const& ep, bh::request req = get(),
                               bh::request_options ro = {}) {
    auto o = std::make_shared<outcome>();
    c.async_request(ep, std::move(req), ro, o->info, [o](error_code ec, bh::response res) {
        o->ec = ec;
        o->res = std::move(res);
        o->done = true;
    });
    CHECK_FALSE(o->done); // never inline
    return o;
}

outcome fetch(net::io_context& ioc, bh::client& c, bh::endpoint const& ep, bh::request req = get(),
              bh::request_options ro = {}) {
    auto o = start(c, ep, std::move(req), ro);
    REQUIRE(run_until(ioc, [&] { return o->done; }));
    return *o;
}

using test_common::contains;

std::string http_date(std::chrono::system_clock::time_point tp) {
    std::time_t const t = std::chrono::system_clock::to_time_t(tp);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return buf;
}

// ---- a throw-away PKI, made with OpenSSL's C API -------------------------------------

struct key_and_cert {
    std::string cert_pem, key_pem;
};

struct test_pki {
    std::filesystem::path dir;
    std::filesystem::path ca_file;
    key_and_cert localhost;  // SAN: DNS:localhost, IP:127.0.0.1
    key_and_cert wrong_name; // SAN: DNS:example.test

    ~test_pki() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, char const* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
    REQUIRE(ext != nullptr);
    REQUIRE(X509_add_ext(cert, ext, -1) == 1);
    X509_EXTENSION_free(ext);
}

X509* make_cert(EVP_PKEY* key, char const* cn, X509* issuer, EVP_PKEY* issuer_key, char const* san, long serial) {
    X509* x = X509_new();
    REQUIRE(x != nullptr);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<unsigned char const*>(cn), -1, -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
    bool const ca = issuer == nullptr;
    add_ext(x, &ctx, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add_ext(x, &ctx, NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    add_ext(x, &ctx, NID_subject_key_identifier, "hash");
    if (!ca) {
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
        add_ext(x, &ctx, NID_ext_key_usage, "serverAuth");
        add_ext(x, &ctx, NID_subject_alt_name, san);
    }
    REQUIRE(X509_sign(x, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

std::string pem_of(X509* x) {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(b);
    return out;
}

std::string pem_of(EVP_PKEY* k) {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(b);
    return out;
}

test_pki const& pki() {
    static test_pki const p = [] {
        test_pki out;
        std::random_device rd;
        out.dir = std::filesystem::temp_directory_path() /
                  ("baton-http-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
        std::filesystem::create_directories(out.dir);
        EVP_PKEY* ca_key = EVP_EC_gen("P-256");
        EVP_PKEY* leaf_key = EVP_EC_gen("P-256");
        EVP_PKEY* other_key = EVP_EC_gen("P-256");
        REQUIRE(ca_key != nullptr);
        REQUIRE(leaf_key != nullptr);
        REQUIRE(other_key != nullptr);
        X509* ca = make_cert(ca_key, "baton test CA", nullptr, nullptr, nullptr, 1);
        X509* leaf = make_cert(leaf_key, "localhost", ca, ca_key, "DNS:localhost,IP:127.0.0.1", 2);
        X509* other = make_cert(other_key, "example.test", ca, ca_key, "DNS:example.test", 3);
        out.ca_file = out.dir / "ca.pem";
        std::ofstream(out.ca_file) << pem_of(ca);
        out.localhost = {pem_of(leaf), pem_of(leaf_key)};
        out.wrong_name = {pem_of(other), pem_of(other_key)};
        X509_free(ca);
        X509_free(leaf);
        X509_free(other);
        EVP_PKEY_free(ca_key);
        EVP_PKEY_free(leaf_key);
        EVP_PKEY_free(other_key);
        return out;
    }();
    return p;
}

std::unique_ptr<net::ssl::context> server_tls(key_and_cert const& kc) {
    auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    ctx->use_certificate_chain(net::buffer(kc.cert_pem));
    ctx->use_private_key(net::buffer(kc.key_pem), net::ssl::context::pem);
    return ctx;
}

} // namespace

TEST_SUITE("http.client") {

TEST_CASE("endpoints parse from URLs and refuse what would be silently ignored") {
    auto e = bh::parse_endpoint("http://127.0.0.1:8000");
    REQUIRE(e.has_value());
    CHECK(e->scheme == bh::scheme::http);
    CHECK(e->host == "127.0.0.1");
    CHECK(e->port == 8000);
    CHECK(e->host_header() == "127.0.0.1:8000");

    e = bh::parse_endpoint("HTTPS://S3.EU-West-1.AmazonAWS.com/");
    REQUIRE(e.has_value());
    CHECK(e->is_tls());
    CHECK(e->host == "s3.eu-west-1.amazonaws.com");
    CHECK(e->port == 443);
    CHECK(e->host_header() == "s3.eu-west-1.amazonaws.com");
    CHECK(e->origin() == "https://s3.eu-west-1.amazonaws.com:443");

    e = bh::parse_endpoint("http://[::1]:9000");
    REQUIRE(e.has_value());
    CHECK(e->host == "::1");
    CHECK(e->host_header() == "[::1]:9000");
    CHECK(bh::endpoint::from_url("http://localhost") == bh::endpoint{bh::scheme::http, "localhost", 80});

    struct bad {
        char const* url;
        char const* says;
    };
    for (auto const& b : {
             bad{"localhost:8000", "needs a scheme"},
             bad{"127.0.0.1", "needs a scheme"},
             bad{"ftp://example.com", "unsupported scheme 'ftp'"},
             bad{"http://", "no host"},
             bad{"http://host:0", "port"},
             bad{"http://host:65536", "port"},
             bad{"http://host:80x", "after the host"},
             bad{"http://AKIDEXAMPLE:s3cr3t@host", "user information"},
             bad{"http://host/bucket", "must not have a path"},
             bad{"http://host/?x=1", "query"},
             bad{"http://host/#frag", "fragment"},
             bad{"http://ho st", "URI"},
         }) {
        INFO(std::string(b.url));
        baton::diagnostics d;
        INFO(d.message);
        auto r = bh::parse_endpoint(b.url, d);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error() == errc::invalid_argument);
        CHECK(contains(d.message, b.says));
        CHECK_FALSE(contains(d.message, "s3cr3t"));
    }
    CHECK_THROWS_AS(bh::endpoint::from_url("nope"), baton::config_error);
}

TEST_CASE("IMF-fixdate parsing") {
    using namespace std::chrono;
    auto t = bh::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT");
    REQUIRE(t);
    CHECK(*t == sys_days{1994y / November / 6} + 8h + 49min + 37s);
    CHECK(bh::parse_http_date(http_date(sys_days{2026y / February / 28} + 23h + 59min + 59s)) ==
          sys_days{2026y / February / 28} + 23h + 59min + 59s);
    CHECK_FALSE(bh::parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT")); // RFC 850: not accepted
    CHECK_FALSE(bh::parse_http_date("Sun Nov  6 08:49:37 1994"));       // asctime: not accepted
    CHECK_FALSE(bh::parse_http_date("Sun, 31 Nov 1994 08:49:37 GMT"));  // no such day
    CHECK_FALSE(bh::parse_http_date("Sun, 06 Nov 1994 24:49:37 GMT"));
    CHECK_FALSE(bh::parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"));
    CHECK_FALSE(bh::parse_http_date("Xyz, 06 Nov 1994 08:49:37 GMT"));
    CHECK_FALSE(bh::parse_http_date(""));
}

TEST_CASE("options are validated") {
    net::io_context ioc;
    bh::client_options o;
    o.max_connections_per_endpoint = 0;
    CHECK_THROWS_AS(bh::client(ioc.get_executor(), o), baton::config_error);
    o = {};
    o.attempt_timeout = 0ms;
    CHECK_THROWS_AS(bh::client(ioc.get_executor(), o), baton::config_error);
    // Timeouts whose deadlines (now + timeout, in nanoseconds) would overflow.
    o = {};
    o.attempt_timeout = std::chrono::milliseconds::max();
    CHECK_THROWS_WITH_AS(bh::client(ioc.get_executor(), o), doctest::Contains("attempt_timeout must be positive and at most 24 hours"),
                         baton::config_error);
    o = {};
    o.connect_timeout = std::chrono::hours(25);
    CHECK_THROWS_WITH_AS(bh::client(ioc.get_executor(), o), doctest::Contains("connect_timeout"), baton::config_error);
    o = {};
    o.idle_timeout = std::chrono::milliseconds::max();
    CHECK_THROWS_WITH_AS(bh::client(ioc.get_executor(), o), doctest::Contains("idle_timeout must be from 0 to 24 hours"),
                         baton::config_error);
    o = {};
    o.attempt_timeout = bh::client_options::max_timeout;
    o.connect_timeout = bh::client_options::max_timeout;
    o.idle_timeout = bh::client_options::max_timeout;
    CHECK_NOTHROW(bh::client(ioc.get_executor(), o));
    o = {};
    o.ca_file = "/nonexistent/baton/ca.pem";
    CHECK_THROWS_WITH_AS(bh::client(ioc.get_executor(), o), doctest::Contains("client_options::ca_file"),
                         baton::config_error);
}

TEST_CASE("keep-alive: sequential requests reuse one connection" *
          doctest::test_suite("concurrency")) {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) { return ok("hello " + std::string(r.target())); });
    bh::client c(ioc.get_executor());
    for (int i = 0; i < 5; ++i) {
        auto o = fetch(ioc, c, srv.ep(), get("/n" + std::to_string(i)));
        REQUIRE_FALSE(o.ec);
        CHECK(o.res.result() == bhttp::status::ok);
        CHECK(o.res.body() == "hello /n" + std::to_string(i));
        CHECK(o.info.request_sent);
        CHECK(o.info.response_received);
        CHECK_FALSE(o.info.outcome_unknown());
        CHECK(o.info.diag.http_status == 200);
        CHECK(o.info.reused_connection == (i > 0));
    }
    CHECK(srv.stats().accepted == 1);
    CHECK(c.connections_opened() == 1);
    CHECK(c.idle_connections() == 1);
    // Host is filled in from the endpoint.
    CHECK(srv.stats().seen.at(0)[bhttp::field::host] == "127.0.0.1:" + std::to_string(srv.port()));
}

TEST_CASE("a PUT gets Content-Length, and HEAD responses are read without a body") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) {
        if (r.method() == bhttp::verb::head) {
            reply h = ok("");
            h.msg.content_length(12345); // a HEAD response announces the body it does not send
            return h;
        }
        return ok("stored " + std::to_string(r.body().size()));
    });
    bh::client c(ioc.get_executor());
    bh::request put{bhttp::verb::put, "/key", 11};
    put.body() = "payload";
    auto o = fetch(ioc, c, srv.ep(), put);
    REQUIRE_FALSE(o.ec);
    CHECK(o.res.body() == "stored 7");
    CHECK(srv.stats().seen.at(0)[bhttp::field::content_length] == "7");
    o = fetch(ioc, c, srv.ep(), bh::request{bhttp::verb::head, "/key", 11});
    REQUIRE_FALSE(o.ec);
    CHECK(o.res.body().empty());
    o = fetch(ioc, c, srv.ep());
    REQUIRE_FALSE(o.ec);
    CHECK(srv.stats().accepted == 1);
}

TEST_CASE("Connection: close is honoured from either side") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) { return ok("bye", false); });
    bh::client c(ioc.get_executor());
    for (int i = 0; i < 3; ++i) {
        auto o = fetch(ioc, c, srv.ep());
        REQUIRE_FALSE(o.ec);
        CHECK(o.res.body() == "bye");
        CHECK_FALSE(o.info.reused_connection);
    }
    CHECK(srv.stats().accepted == 3);
    CHECK(c.idle_connections() == 0);

    test_server srv2(ioc, [](server_request const&, int) { return ok(); });
    for (int i = 0; i < 2; ++i) {
        auto req = get();
        req.keep_alive(false);
        auto o = fetch(ioc, c, srv2.ep(), req);
        REQUIRE_FALSE(o.ec);
    }
    CHECK(srv2.stats().accepted == 2);
    CHECK(c.idle_connections() == 0);
}

TEST_CASE("an idle connection the server closed is not reused, and nothing is sent on it" *
          doctest::test_suite("concurrency")) {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) {
        reply r = ok("once"); // says keep-alive, then closes anyway
        r.kind = reply::respond_close;
        return r;
    });
    bh::client c(ioc.get_executor());
    auto o = fetch(ioc, c, srv.ep());
    REQUIRE_FALSE(o.ec);
    CHECK(c.idle_connections() == 1);
    REQUIRE(run_until(ioc, [&] { return srv.stats().open_now == 0; })); // the server's close has landed
    o = fetch(ioc, c, srv.ep());
    REQUIRE_FALSE(o.ec);
    CHECK_FALSE(o.info.reused_connection);
    CHECK(srv.stats().accepted == 2);
    CHECK(srv.stats().requests == 2);
}

TEST_CASE("idle connections older than idle_timeout are retired") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) { return ok(); });
    bh::client_options opts;
    opts.idle_timeout = 0ms; // every idle connection has expired by the next request
    bh::client c(ioc.get_executor(), opts);
    for (int i = 0; i < 3; ++i) REQUIRE_FALSE(fetch(ioc, c, srv.ep()).ec);
    CHECK(srv.stats().accepted == 3);
    c.close_idle();
    CHECK(c.idle_connections() == 0);
}

TEST_CASE("the pool cap queues requests beyond it, FIFO, and they reuse the capped connections" *
          doctest::test_suite("concurrency")) {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) { return ok(std::string(r.target())); });
    bh::client_options opts;
    opts.max_connections_per_endpoint = 2;
    bh::client c(ioc.get_executor(), opts);
    std::vector<std::shared_ptr<outcome>> os;
    for (int i = 0; i < 7; ++i) os.push_back(start(c, srv.ep(), get("/" + std::to_string(i))));
    REQUIRE(run_until(ioc, [&] { return std::all_of(os.begin(), os.end(), [](auto& o) { return o->done; }); }));
    int reused = 0;
    for (int i = 0; i < 7; ++i) {
        REQUIRE_FALSE(os[i]->ec);
        CHECK(os[i]->res.body() == "/" + std::to_string(i));
        reused += os[i]->info.reused_connection ? 1 : 0;
    }
    CHECK(reused == 5);
    CHECK(srv.stats().accepted == 2);
    CHECK(srv.stats().max_open == 2);
    CHECK(c.idle_connections() == 2);
}

TEST_CASE("a request queued at the cap times out unsent, and a queued request can be cancelled" *
          doctest::test_suite("concurrency")) {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) { return with_kind(reply::hang); });
    bh::client_options opts;
    opts.max_connections_per_endpoint = 1;
    bh::client c(ioc.get_executor(), opts);
    auto holder = start(c, srv.ep(), get(), bh::request_options{5000ms});
    REQUIRE(run_until(ioc, [&] { return srv.stats().requests == 1; }));

    auto queued = start(c, srv.ep(), get(), bh::request_options{150ms});
    REQUIRE(run_until(ioc, [&] { return queued->done; }));
    CHECK(queued->ec == errc::timeout);
    CHECK(baton::is_retryable(queued->ec));
    CHECK_FALSE(queued->info.request_sent);
    CHECK_FALSE(queued->info.outcome_unknown());
    CHECK(contains(queued->info.diag.message, "max_connections_per_endpoint"));
    CHECK(contains(queued->info.diag.message, "not sent"));

    net::cancellation_signal sig;
    auto cancelled = std::make_shared<outcome>();
    c.async_request(srv.ep(), get(), cancelled->info,
                    net::bind_cancellation_slot(sig.slot(), [cancelled](error_code ec, bh::response) {
                        cancelled->ec = ec;
                        cancelled->done = true;
                    }));
    ioc.poll();
    CHECK_FALSE(cancelled->done);
    sig.emit(net::cancellation_type::terminal);
    REQUIRE(run_until(ioc, [&] { return cancelled->done; }));
    CHECK(cancelled->ec == net::error::operation_aborted);
    CHECK_FALSE(cancelled->info.request_sent);
    CHECK_FALSE(holder->done);
    CHECK(srv.stats().accepted == 1);
}

TEST_CASE("an oversized response body or header is invalid_response naming the limit") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) {
        if (r.target() == "/big-body") return ok(std::string(4096, 'x'));
        if (r.target() == "/big-header") {
            reply h = ok();
            h.msg.set("x-padding", std::string(2000, 'p'));
            return h;
        }
        return ok(std::string(1024, 'y'));
    });
    bh::client_options opts;
    opts.max_response_body_bytes = 1024;
    opts.max_response_header_bytes = 1024;
    bh::client c(ioc.get_executor(), opts);

    auto o = fetch(ioc, c, srv.ep(), get("/big-body"));
    CHECK(o.ec == errc::invalid_response);
    CHECK(contains(o.info.diag.message, "max_response_body_bytes (1024 bytes)"));
    CHECK(o.info.diag.http_status == 200);
    CHECK(o.info.request_sent);
    CHECK_FALSE(baton::is_retryable(o.ec));

    o = fetch(ioc, c, srv.ep(), get("/big-header"));
    CHECK(o.ec == errc::invalid_response);
    CHECK(contains(o.info.diag.message, "max_response_header_bytes (1024 bytes)"));

    o = fetch(ioc, c, srv.ep(), get("/exactly-at-the-limit"));
    REQUIRE_FALSE(o.ec);
    CHECK(o.res.body().size() == 1024);
    CHECK(srv.stats().accepted == 3); // a failed exchange never returns its connection to the pool
}

TEST_CASE("a truncated or malformed response is an error; a close before any byte is eof with the outcome unknown") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) {
        reply x;
        x.kind = reply::raw_then_close;
        if (r.target() == "/truncated")
            x.raw = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it";
        else if (r.target() == "/garbage")
            x.raw = "HTTP/1.1 abc\r\n\r\n";
        else
            x.kind = reply::close_now;
        return x;
    });
    bh::client c(ioc.get_executor());

    auto o = fetch(ioc, c, srv.ep(), get("/truncated"));
    CHECK(o.ec == errc::invalid_response);
    CHECK(contains(o.info.diag.message, "truncated"));
    CHECK(o.info.diag.http_status == 200);
    CHECK(o.info.request_sent);
    CHECK(o.info.outcome_unknown());

    o = fetch(ioc, c, srv.ep(), get("/garbage"));
    CHECK(o.ec == errc::invalid_response);
    CHECK(contains(o.info.diag.message, "malformed"));

    o = fetch(ioc, c, srv.ep(), get("/close"));
    CHECK(o.ec == net::error::eof);
    CHECK(baton::is_retryable(o.ec));
    CHECK(o.info.request_sent);
    CHECK(o.info.outcome_unknown());
    CHECK(contains(o.info.diag.message, "before any response"));
    CHECK(contains(o.info.diag.message, "outcome is unknown"));
}

TEST_CASE("connection refused is a retryable error and nothing was sent") {
    net::io_context ioc;
    test_common::refused_port const refused;
    std::uint16_t const port = refused.port();
    bh::client c(ioc.get_executor());
    auto o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "127.0.0.1", port});
    CHECK(o.ec == net::error::connection_refused);
    CHECK(baton::is_retryable(o.ec));
    CHECK_FALSE(o.info.request_sent);
    CHECK_FALSE(o.info.outcome_unknown());
    CHECK(contains(o.info.diag.message, "cannot connect to http://127.0.0.1:" + std::to_string(port)));
    CHECK(c.connections_opened() == 0);

    // Through the resolver too.
    o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "localhost", port});
    CHECK(baton::is_retryable(o.ec));
    CHECK_FALSE(o.info.request_sent);
}

TEST_CASE("a connect that gets no answer times out after connect_timeout, unsent") {
    // A listener whose accept queue is full drops further SYNs (Linux, tcp_abort_on_overflow=0),
    // so a connect to it hangs the way one to a black-holed address does, but on loopback.
    net::io_context ioc;
    tcp::acceptor full(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    full.listen(0);
    auto const port = full.local_endpoint().port();
    std::vector<tcp::socket> fillers;
    for (int i = 0; i < 3; ++i) {
        fillers.emplace_back(ioc);
        fillers.back().async_connect(full.local_endpoint(), [](error_code) {});
    }
    bh::client_options opts;
    opts.connect_timeout = 200ms;
    opts.attempt_timeout = 5s;
    bh::client c(ioc.get_executor(), opts);
    auto const t0 = std::chrono::steady_clock::now();
    auto o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "127.0.0.1", port});
    auto const took = std::chrono::steady_clock::now() - t0;
    CHECK(o.ec == errc::timeout);
    CHECK(baton::is_retryable(o.ec));
    CHECK_FALSE(o.info.request_sent);
    CHECK_FALSE(o.info.outcome_unknown());
    CHECK(contains(o.info.diag.message, "connecting to http://127.0.0.1:" + std::to_string(port) + " timed out"));
    CHECK(contains(o.info.diag.message, "connect_timeout, 200 ms"));
    CHECK(took >= 190ms);
    CHECK(took < 4s); // well before the 5 s attempt timeout
    CHECK(c.connections_opened() == 0);
}

TEST_CASE("an unanswered request times out with the request-sent fact, and its connection is closed") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) { return with_kind(reply::hang); });
    bh::client_options opts;
    opts.attempt_timeout = 200ms;
    bh::client c(ioc.get_executor(), opts);
    auto const t0 = std::chrono::steady_clock::now();
    auto o = fetch(ioc, c, srv.ep());
    auto const took = std::chrono::steady_clock::now() - t0;
    CHECK(o.ec == errc::timeout);
    CHECK(baton::is_retryable(o.ec));
    CHECK(o.info.request_sent);
    CHECK_FALSE(o.info.response_received);
    CHECK(o.info.outcome_unknown());
    CHECK(contains(o.info.diag.message, "outcome is unknown"));
    CHECK(contains(o.info.diag.message, "attempt timeout, 200 ms"));
    CHECK(took >= 190ms);
    CHECK(took < 5s);
    REQUIRE(run_until(ioc, [&] { return srv.stats().peer_closed == 1; }));
    CHECK(c.idle_connections() == 0);
}

TEST_CASE("a request the server never reads times out unsent, with one deadline for the whole exchange") {
    // The peer accepts and then reads nothing: the body fills both sockets' buffers and the
    // write cannot finish, so the attempt's deadline ends it with the request not sent.
    net::io_context ioc;
    tcp::acceptor silent(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    tcp::socket held(ioc);
    silent.async_accept(held, [](error_code) {});
    bh::client_options opts;
    opts.attempt_timeout = 300ms;
    bh::client c(ioc.get_executor(), opts);
    bh::request big{bhttp::verb::put, "/big", 11};
    big.body().assign(64 << 20, 'x');
    auto const t0 = std::chrono::steady_clock::now();
    auto o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "127.0.0.1", silent.local_endpoint().port()}, std::move(big));
    auto const took = std::chrono::steady_clock::now() - t0;
    CHECK(o.ec == errc::timeout);
    CHECK_FALSE(o.info.request_sent);
    CHECK_FALSE(o.info.outcome_unknown());
    CHECK(contains(o.info.diag.message, "it was not completely sent"));
    CHECK(contains(o.info.diag.message, "attempt timeout, 300 ms"));
    CHECK(took >= 290ms);
    CHECK(took < 5s);
    CHECK(c.idle_connections() == 0);
}

TEST_CASE("a request started from the last one's handler keeps its own deadline") {
    // The first request's deadline leaves the shared timer queue only after its handler ran,
    // so the queue's timer is still armed at that earlier deadline when it fires: it must find
    // the second request not yet due, wait again, and end it at its own deadline.
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) { return r.target() == "/second" ? with_kind(reply::hang) : ok(); });
    bh::client_options opts;
    opts.attempt_timeout = 300ms;
    bh::client c(ioc.get_executor(), opts);
    std::shared_ptr<outcome> second;
    std::chrono::steady_clock::time_point second_started{};
    auto first = std::make_shared<outcome>();
    bh::request_info first_info;
    c.async_request(srv.ep(), get("/first"), {}, first_info, [&](error_code ec, bh::response) {
        first->ec = ec;
        first->done = true;
        if (ec) return;
        second_started = std::chrono::steady_clock::now();
        bh::request_options ro;
        ro.attempt_timeout = 400ms;
        second = start(c, srv.ep(), get("/second"), ro);
    });
    REQUIRE(run_until(ioc, [&] { return second && second->done; }));
    CHECK_FALSE(first->ec);
    auto const took = std::chrono::steady_clock::now() - second_started;
    CHECK(second->ec == errc::timeout);
    CHECK(second->info.outcome_unknown());
    CHECK(contains(second->info.diag.message, "attempt timeout, 400 ms"));
    CHECK(took >= 390ms);
    CHECK(took < 5s);
}

TEST_CASE("a chain of requests, each started from the last one's handler, leaves no timer behind") {
    // io_context::run returns when the chain ends, although every request had an hour left:
    // no deadline stays queued, and the shared timer is not left waiting.
    net::io_context server_ioc;
    test_server srv(server_ioc, [](server_request const&, int) { return ok(); });
    auto guard = net::make_work_guard(server_ioc);
    std::thread server_thread([&] { server_ioc.run(); });
    net::io_context ioc;
    bh::client_options opts;
    opts.attempt_timeout = 1h;
    std::optional<bh::client> c(std::in_place, ioc.get_executor(), opts);
    int completed = 0;
    error_code last;
    bh::request_info info;
    std::function<void()> next = [&] {
        c->async_request(srv.ep(), get(), {}, info, [&](error_code ec, bh::response) {
            ++completed;
            last = ec;
            if (!ec && completed < 20) next();
        });
    };
    next();
    ioc.run_for(20s);
    bool const returned_by_itself = ioc.stopped();
    c.reset(); // the client's idle connection closes
    guard.reset();
    server_ioc.stop();
    server_thread.join();
    CHECK_FALSE(last);
    CHECK(completed == 20);
    CHECK(returned_by_itself);
}

TEST_CASE("a body larger than the socket takes at once arrives whole, in order") {
    // The client writes a plain request at once when the socket takes it; 16 MiB does not fit,
    // so the rest goes out asynchronously from where the first write stopped.
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) {
        return ok(std::to_string(r.body().size()) + " " + std::to_string(std::hash<std::string>{}(r.body())));
    });
    bh::client c(ioc.get_executor());
    for (std::size_t size : {std::size_t{16} << 20, std::size_t{1000}}) {
        bh::request put{bhttp::verb::put, "/big", 11};
        put.body().resize(size);
        for (std::size_t i = 0; i < size; ++i) put.body()[i] = static_cast<char>('a' + (i * 7919) % 26);
        std::string const expected = std::to_string(size) + " " + std::to_string(std::hash<std::string>{}(put.body()));
        auto o = fetch(ioc, c, srv.ep(), std::move(put));
        REQUIRE_FALSE(o.ec);
        CHECK(o.res.body() == expected);
    }
    CHECK(c.connections_opened() == 1);
}

TEST_CASE("a write that completed after a cancellation closed its socket still counts as sent") {
    // The interleaving: a cancellation is posted; before it runs, the request is handed a
    // connection and written at once (Asio writes speculatively), its completion queued behind
    // the cancellation, which closes the socket. The write had sent everything: the outcome is
    // unknown, never "not sent" (a caller would resend a write that may have been applied).
    net::io_context ioc;
    auto st = std::make_shared<bh::detail::client_state>(ioc.get_executor(), bh::client_options{});
    bh::request_info info;
    auto op = std::make_shared<bh::detail::request_op>(st, bh::endpoint{bh::scheme::http, "127.0.0.1", 9}, get(),
                                                       bh::request_options{}, &info);
    std::optional<error_code> got;
    op->handler.emplace([&](error_code ec, bh::response) { got = ec; });
    op->ph = bh::detail::request_op::phase::writing;
    op->cancelled = true;       // on_cancel ran first and closed the socket
    op->on_write(error_code{}); // then the write's completion: everything was written
    ioc.run();
    REQUIRE(got.has_value());
    CHECK(*got == net::error::operation_aborted);
    CHECK(info.request_sent);
    CHECK(info.outcome_unknown());
    CHECK(contains(info.diag.message, "outcome is unknown"));
}

TEST_CASE("a queued request handed a connection never completes inside the completion that handed it over") {
    // Request X's response arrives and X gives its connection back; W, queued at the pool cap,
    // adopts it. The server has reset that connection, so W's write fails at once. W's handler
    // must not run inside X's completion: on a strand, a throw there would leave X's handler
    // never called, and X's request_info never filled in.
    net::io_context ioc;
    bh::client_options o;
    o.max_connections_per_endpoint = 1;
    auto st = std::make_shared<bh::detail::client_state>(ioc.get_executor(), o);
    tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    tcp::socket client_side(ioc);
    client_side.connect(acc.local_endpoint());
    tcp::socket server_side = acc.accept();
    server_side.set_option(net::socket_base::linger(true, 0));
    server_side.close(); // a reset, not a polite close
    bh::endpoint const ep{bh::scheme::http, "127.0.0.1", acc.local_endpoint().port()};
    auto conn = std::make_unique<bh::detail::connection>(ioc.get_executor(), nullptr);
    conn->plain->socket() = std::move(client_side);
    conn->plain->socket().non_blocking(true);

    bh::request put{bhttp::verb::put, "/w", 11};
    put.body() = "x";
    put.prepare_payload();
    bh::request_info w_info, x_info;
    auto w = std::make_shared<bh::detail::request_op>(st, ep, put, bh::request_options{}, &w_info);
    std::optional<error_code> w_ec;
    bool x_ran = false, w_ran_inside_x = false;
    w->handler.emplace([&](error_code ec, bh::response) { w_ec = ec; });
    w->deadline = std::chrono::steady_clock::now() + 10s;
    w->ph = bh::detail::request_op::phase::queued;
    w->queue_timer.emplace(ioc);
    st->pools[ep.origin()].in_use = 1;
    st->pools[ep.origin()].waiting.push_back(w);

    auto x = std::make_shared<bh::detail::request_op>(st, ep, put, bh::request_options{}, &x_info);
    x->handler.emplace([&](error_code, bh::response) { x_ran = true; });
    x->ph = bh::detail::request_op::phase::reading;
    x->holds_place = true;
    x->conn = std::move(conn);
    x->info.request_sent = x->info.response_received = true;
    net::post(ioc, [&, x] { // as on_read does when a response arrived
        x->complete(error_code{}, bh::response{}, true);
        w_ran_inside_x = w_ec.has_value();
    });
    x.reset();
    REQUIRE(run_until(ioc, [&] { return w_ec.has_value(); }));
    CHECK_FALSE(w_ran_inside_x);
    CHECK(x_ran);
    CHECK(x_info.response_received);
    CHECK(*w_ec); // the reset connection: an error, never a response
    CHECK(w_info.reused_connection);
}

TEST_CASE("a request is sent as the very bytes Beast's serializer writes") {
    // The client writes requests itself, in one piece; any difference from Beast's serializer
    // would be a different request. Random methods, targets, field orders, versions and bodies,
    // chunked or not.
    std::mt19937_64 rng(20261126);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::vector<bhttp::verb> const verbs{bhttp::verb::get, bhttp::verb::put, bhttp::verb::post,
                                         bhttp::verb::head, bhttp::verb::delete_};
    std::vector<std::string> const names{"Host", "Content-Type", "X-Amz-Date", "Authorization", "If-Match",
                                         "x-amz-content-sha256", "X-Custom-Thing", "Accept-Encoding"};
    std::string const alphabet = "abcXYZ019 -_/.:;,=\"{}()%\t";
    auto text = [&](std::size_t max) {
        std::string t(pick(max + 1), ' ');
        for (auto& ch : t) ch = alphabet[pick(alphabet.size())];
        return t;
    };
    for (int i = 0; i < 500; ++i) {
        bh::request r;
        if (pick(8) == 0)
            r.method_string("PROPFIND");
        else
            r.method(verbs[pick(verbs.size())]);
        r.target("/" + text(40));
        r.version(pick(4) == 0 ? 10 : 11);
        for (std::size_t f = pick(9); f > 0; --f) r.insert(names[pick(names.size())], text(60));
        r.body() = pick(3) == 0 ? std::string() : text(300);
        if (pick(4) == 0 && !r.body().empty())
            r.chunked(true); // Beast's framing of an empty chunked body is wrong: see below
        else if (pick(2) == 0)
            r.prepare_payload();
        std::string mine;
        bh::detail::write_request_head(r, mine);
        mine += r.body(); // sent after the head, in the same gathered write
        mine += bh::detail::request_tail(r);
        std::ostringstream beast;
        beast << r;
        CAPTURE(i);
        CHECK(mine == beast.str());
    }
    // A chunked request without a body is its last chunk alone; Beast's serializer sends the last
    // chunk twice, and a server reads the second as the start of another request.
    bh::request empty{bhttp::verb::post, "/", 11};
    empty.chunked(true);
    std::string mine;
    bh::detail::write_request_head(empty, mine);
    mine += bh::detail::request_tail(empty);
    CHECK(mine == "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
}

TEST_CASE("cancellation closes the connection in use and completes with operation_aborted") {
    net::io_context ioc;
    test_server srv(ioc, [](server_request const& r, int) {
        return r.target() == "/hang" ? with_kind(reply::hang) : ok();
    });
    bh::client c(ioc.get_executor());
    REQUIRE_FALSE(fetch(ioc, c, srv.ep()).ec); // one idle connection to reuse

    net::cancellation_signal sig;
    auto o = std::make_shared<outcome>();
    c.async_request(srv.ep(), get("/hang"), o->info,
                    net::bind_cancellation_slot(sig.slot(), [o](error_code ec, bh::response) {
                        o->ec = ec;
                        o->done = true;
                    }));
    REQUIRE(run_until(ioc, [&] { return srv.stats().requests == 2; }));
    sig.emit(net::cancellation_type::terminal);
    REQUIRE(run_until(ioc, [&] { return o->done; }));
    CHECK(o->ec == net::error::operation_aborted);
    CHECK(o->info.request_sent);
    CHECK(o->info.outcome_unknown());
    CHECK(o->info.reused_connection);
    REQUIRE(run_until(ioc, [&] { return srv.stats().peer_closed == 1; }));
    CHECK(c.idle_connections() == 0);

    auto next = fetch(ioc, c, srv.ep());
    REQUIRE_FALSE(next.ec);
    CHECK_FALSE(next.info.reused_connection);
    CHECK(srv.stats().accepted == 2);
}

TEST_CASE("an invalid endpoint fails through the handler, never inline") {
    net::io_context ioc;
    bh::client c(ioc.get_executor());
    auto o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "", 80});
    CHECK(o.ec == errc::invalid_argument);
    o = fetch(ioc, c, bh::endpoint{bh::scheme::http, "127.0.0.1", 1}, get(), bh::request_options{0ms});
    CHECK(o.ec == errc::invalid_argument);
}

TEST_CASE("the Date header gives a clock-skew estimate") {
    net::io_context ioc;
    auto offset = std::chrono::system_clock::duration(1h);
    test_server srv(ioc, [&](server_request const&, int) {
        reply r = ok();
        r.msg.set(bhttp::field::date, http_date(std::chrono::system_clock::now() + offset));
        return r;
    });
    bh::client c(ioc.get_executor());
    CHECK_FALSE(c.has_skew_estimate());
    CHECK(c.skew_estimate() == std::chrono::system_clock::duration::zero());
    REQUIRE_FALSE(fetch(ioc, c, srv.ep()).ec);
    REQUIRE(c.has_skew_estimate());
    CHECK(c.skew_estimate() > 1h - 2s);
    CHECK(c.skew_estimate() < 1h + 2s);

    offset = -std::chrono::system_clock::duration(20min);
    bh::client copy = c; // copies share the estimate
    REQUIRE_FALSE(fetch(ioc, copy, srv.ep()).ec);
    CHECK(c.skew_estimate() > -20min - 2s);
    CHECK(c.skew_estimate() < -20min + 2s);

    offset = {};
    REQUIRE_FALSE(fetch(ioc, c, srv.ep()).ec);
    CHECK(c.skew_estimate() > -2s);
    CHECK(c.skew_estimate() < 2s);
}

TEST_CASE("TLS: a server signed by a trusted CA works, by IP and by name, with keep-alive") {
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    test_server srv(ioc, [](server_request const&, int) { return ok("secret"); }, tls.get());
    bh::client_options opts;
    opts.ca_file = pki().ca_file.string();
    bh::client c(ioc.get_executor(), opts);
    for (int i = 0; i < 3; ++i) {
        auto o = fetch(ioc, c, srv.ep(bh::scheme::https));
        REQUIRE_FALSE(o.ec);
        CHECK(o.res.body() == "secret");
    }
    CHECK(srv.stats().accepted == 1);
    auto o = fetch(ioc, c, srv.ep(bh::scheme::https, "localhost"));
    REQUIRE_FALSE(o.ec);
    CHECK(srv.stats().handshake_failures == 0);
    CHECK(c.warnings().empty());
}

TEST_CASE("plain and TLS alike: large bodies both ways and a chunked request arrive whole, in order") {
    // To Beast, both kinds of connection are one stream type that forwards each read and write to
    // its TCP or TLS stream: a request written in many pieces, chunked or not, and a response
    // read in many pieces all go through that forwarding.
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    auto answer = [](server_request const& r, int) {
        std::string body = std::to_string(r.body().size()) + " " +
                           std::to_string(std::hash<std::string>{}(r.body())) + " ";
        for (std::size_t i = 0; i < (std::size_t{3} << 20); ++i) body.push_back(static_cast<char>('A' + i % 23));
        return ok(body);
    };
    test_server plain_srv(ioc, answer);
    test_server tls_srv(ioc, answer, tls.get());
    bh::client_options opts;
    opts.ca_file = pki().ca_file.string();
    bh::client c(ioc.get_executor(), opts);
    for (auto const& ep : {plain_srv.ep(), tls_srv.ep(bh::scheme::https)}) {
        for (bool chunked : {false, true}) {
            CAPTURE(ep.is_tls());
            CAPTURE(chunked);
            bh::request put{bhttp::verb::put, "/big", 11};
            put.body().resize(std::size_t{5} << 20);
            for (std::size_t i = 0; i < put.body().size(); ++i)
                put.body()[i] = static_cast<char>('a' + (i * 7919) % 26);
            std::string expected = std::to_string(put.body().size()) + " " +
                                   std::to_string(std::hash<std::string>{}(put.body())) + " ";
            for (std::size_t i = 0; i < (std::size_t{3} << 20); ++i)
                expected.push_back(static_cast<char>('A' + i % 23));
            if (chunked) put.chunked(true);
            auto o = fetch(ioc, c, ep, std::move(put));
            REQUIRE_FALSE(o.ec);
            CHECK(o.res.body() == expected);
        }
    }
    CHECK(c.connections_opened() == 2); // each kept alive for the second request
}

TEST_CASE("plain and TLS alike: an empty chunked request leaves its kept-alive connection clean") {
    // A chunked request without a body is its last chunk alone. One byte more (Beast's serializer
    // sent the last chunk twice) and the server reads it as the start of the next request.
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    test_server plain_srv(ioc, [](server_request const&, int) { return ok(); });
    test_server tls_srv(ioc, [](server_request const&, int) { return ok(); }, tls.get());
    bh::client_options opts;
    opts.ca_file = pki().ca_file.string();
    bh::client c(ioc.get_executor(), opts);
    for (test_server* srv : {&plain_srv, &tls_srv}) {
        auto const ep = srv == &tls_srv ? srv->ep(bh::scheme::https) : srv->ep();
        CAPTURE(ep.is_tls());
        bh::request empty{bhttp::verb::post, "/first", 11};
        empty.chunked(true);
        REQUIRE_FALSE(fetch(ioc, c, ep, std::move(empty)).ec);
        REQUIRE_FALSE(fetch(ioc, c, ep, get("/second")).ec);
        CHECK(srv->stats().accepted == 1);
        CHECK(srv->stats().requests == 2);
        REQUIRE(srv->stats().seen.size() == 2);
        CHECK(srv->stats().seen[0].body().empty());
        CHECK(srv->stats().seen[1].target() == "/second");
    }
    CHECK(c.connections_opened() == 2);
}

TEST_CASE("a request with both Content-Length and chunked framing is refused unsent") {
    // Two framings in one request: a server and a proxy in front of it may each pick another.
    net::io_context ioc;
    test_server srv(ioc, [](server_request const&, int) { return ok(); });
    bh::client c(ioc.get_executor());
    bh::request both{bhttp::verb::put, "/x", 11};
    both.body() = "abc";
    both.chunked(true);
    both.set(bhttp::field::content_length, "3");
    auto o = fetch(ioc, c, srv.ep(), std::move(both));
    CHECK(o.ec == errc::invalid_argument);
    CHECK_FALSE(o.info.request_sent);
    CHECK(contains(o.info.diag.message, "both Content-Length and Transfer-Encoding"));
    CHECK(srv.stats().accepted == 0);
}

TEST_CASE("TLS: a request the server never reads times out unsent; one it read and left unanswered is unknown") {
    // Over TLS the request passes through the connection's forwarding to the TLS stream: a close
    // in the middle of a write must still say "not sent", and a whole write "sent".
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    tcp::acceptor silent(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    std::vector<std::unique_ptr<net::ssl::stream<tcp::socket>>> held; // handshake, then read nothing
    std::function<void()> accept_next = [&] {
        silent.async_accept([&](error_code ec, tcp::socket s) {
            if (ec) return;
            held.push_back(std::make_unique<net::ssl::stream<tcp::socket>>(std::move(s), *tls));
            held.back()->async_handshake(net::ssl::stream_base::server, [](error_code) {});
            accept_next();
        });
    };
    accept_next();
    test_server hanging(ioc, [](server_request const&, int) { return with_kind(reply::hang); }, tls.get());
    bh::client_options opts;
    opts.ca_file = pki().ca_file.string();
    opts.attempt_timeout = 300ms;
    bh::client c(ioc.get_executor(), opts);
    for (bool chunked : {false, true}) {
        CAPTURE(chunked);
        bh::request big{bhttp::verb::put, "/big", 11};
        big.body().assign(std::size_t{64} << 20, 'x');
        if (chunked) big.chunked(true);
        auto o = fetch(ioc, c, bh::endpoint{bh::scheme::https, "127.0.0.1", silent.local_endpoint().port()},
                       std::move(big));
        CHECK(o.ec == errc::timeout);
        CHECK_FALSE(o.info.request_sent);
        CHECK(contains(o.info.diag.message, "it was not completely sent"));

        bh::request small{bhttp::verb::put, "/small", 11};
        small.body().assign(std::size_t{100} << 10, 'y');
        if (chunked) small.chunked(true);
        o = fetch(ioc, c, hanging.ep(bh::scheme::https), std::move(small));
        CHECK(o.ec == errc::timeout);
        CHECK(o.info.request_sent);
        CHECK(o.info.outcome_unknown());
    }
    CHECK(c.idle_connections() == 0);
}

TEST_CASE("TLS: a certificate the system store does not trust is refused, clearly") {
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    test_server srv(ioc, [](server_request const&, int) { return ok(); }, tls.get());
    bh::client c(ioc.get_executor()); // default: system trust store
    auto o = fetch(ioc, c, srv.ep(bh::scheme::https));
    REQUIRE(o.ec);
    CHECK(o.ec.category() == net::error::get_ssl_category());
    CHECK_FALSE(baton::is_retryable(o.ec));
    CHECK_FALSE(o.info.request_sent);
    CHECK(contains(o.info.diag.message, "TLS certificate verification failed: "));
    CHECK(contains(o.info.diag.message, "local issuer"));
    CHECK(srv.stats().requests == 0);
}

TEST_CASE("TLS: the system trust store is loaded at the first TLS connection, not when the client is made") {
    // SSL_CERT_FILE is read when the store is loaded. Set after the client is made, it is
    // honoured only if loading waited for the first TLS connection (a client of plain-HTTP
    // endpoints never pays the ~20 ms that loading costs).
    net::io_context ioc;
    auto tls = server_tls(pki().localhost);
    test_server srv(ioc, [](server_request const&, int) { return ok(); }, tls.get());
    struct restore_env { // also when a check throws: later cases rely on the system store
        std::optional<std::string> saved;
        restore_env() {
            if (char const* v = std::getenv("SSL_CERT_FILE")) saved = v;
        }
        ~restore_env() {
            if (saved)
                ::setenv("SSL_CERT_FILE", saved->c_str(), 1);
            else
                ::unsetenv("SSL_CERT_FILE");
        }
    } const restore;
    bh::client c(ioc.get_executor()); // default: system trust store
    ::setenv("SSL_CERT_FILE", pki().ca_file.c_str(), 1);
    auto o = fetch(ioc, c, srv.ep(bh::scheme::https, "localhost"));
    CHECK_FALSE(o.ec);
    CHECK(srv.stats().handshake_failures == 0);
}

TEST_CASE("TLS: a certificate for another name is refused, by IP and by name") {
    net::io_context ioc;
    auto tls = server_tls(pki().wrong_name);
    test_server srv(ioc, [](server_request const&, int) { return ok(); }, tls.get());
    bh::client_options opts;
    opts.ca_file = pki().ca_file.string();
    bh::client c(ioc.get_executor(), opts);

    auto o = fetch(ioc, c, srv.ep(bh::scheme::https));
    REQUIRE(o.ec);
    CHECK(o.ec.category() == net::error::get_ssl_category());
    CHECK(contains(o.info.diag.message, "TLS certificate verification failed: IP address mismatch"));

    o = fetch(ioc, c, srv.ep(bh::scheme::https, "localhost"));
    REQUIRE(o.ec);
    CHECK(contains(o.info.diag.message, "TLS certificate verification failed: hostname mismatch"));
    CHECK(srv.stats().requests == 0);
}

TEST_CASE("TLS: insecure_skip_verify connects anyway and says so, once") {
    net::io_context ioc;
    auto tls = server_tls(pki().wrong_name);
    test_server srv(ioc, [](server_request const&, int) { return ok("unverified"); }, tls.get());
    std::vector<std::string> sunk;
    bh::client_options opts;
    opts.insecure_skip_verify = true;
    opts.warning_sink = [&](std::string_view w) { sunk.emplace_back(w); };
    bh::client c(ioc.get_executor(), opts);
    for (int i = 0; i < 2; ++i) {
        auto o = fetch(ioc, c, srv.ep(bh::scheme::https));
        REQUIRE_FALSE(o.ec);
        CHECK(o.res.body() == "unverified");
    }
    REQUIRE(c.warnings().size() == 1);
    CHECK(contains(c.warnings()[0], "insecure_skip_verify"));
    CHECK(contains(c.warnings()[0], "verification is disabled"));
    CHECK(sunk == c.warnings());
}

}
