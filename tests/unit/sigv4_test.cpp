// SigV4 signing: conformance with the AWS/CRT/S3 vectors in ../shared, plus known-answer
// tests that need no shared data, and checks that secrets never leak.
#include <baton/aws/sigv4.hpp>

#include <test_common/shared_data.hpp>

#include <doctest/doctest.h>

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/vector_body.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace http = boost::beast::http;
namespace fs = std::filesystem;
using baton::aws::credentials;
using baton::aws::signing_params;
using baton::aws::signing_result;
using clock_time = std::chrono::system_clock::time_point;

// ------------------------------------------------------------------ raw HTTP test files

// A request as written in the suites' .req / request.txt files (not valid wire HTTP: targets
// may hold spaces and raw UTF-8, header lines may be folded), kept verbatim for Beast.
struct raw_request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
};

raw_request parse_raw(std::string_view text) {
    raw_request r;
    std::size_t pos = 0;
    auto next_line = [&](std::string_view& line) {
        if (pos > text.size()) return false;
        std::size_t const e = text.find('\n', pos);
        if (e == std::string_view::npos) {
            line = text.substr(pos);
            pos = text.size() + 1;
        } else {
            line = text.substr(pos, e - pos);
            pos = e + 1;
        }
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        return true;
    };
    std::string_view line;
    if (!next_line(line)) return r;
    std::size_t const sp = line.find(' ');
    std::size_t const ver = line.rfind(" HTTP/");
    r.method = std::string(line.substr(0, sp));
    r.target = std::string(line.substr(sp + 1, ver - sp - 1));
    while (next_line(line)) {
        if (line.empty()) {
            if (pos <= text.size()) r.body = std::string(text.substr(pos));
            break;
        }
        if ((line.front() == ' ' || line.front() == '\t') && !r.headers.empty()) {
            // obs-fold: an HTTP parser replaces the fold with a space; the signer collapses the rest.
            r.headers.back().second += ' ';
            r.headers.back().second.append(line);
            continue;
        }
        std::size_t const colon = line.find(':');
        r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
    }
    return r;
}

http::request<http::string_body> to_beast(raw_request const& raw) {
    http::request<http::string_body> req;
    req.method_string(raw.method);
    req.target(raw.target);
    req.version(11);
    for (auto const& [name, value] : raw.headers) req.insert(name, value);
    req.body() = raw.body;
    return req;
}

std::string read_file(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Expected-value files sometimes end with a newline; the values themselves never do.
std::string read_expected(fs::path const& p) {
    std::string s = read_file(p);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

std::string header_value(raw_request const& r, std::string_view name) {
    for (auto const& [n, v] : r.headers) {
        if (n.size() != name.size()) continue;
        bool eq = true;
        for (std::size_t i = 0; i < n.size() && eq; ++i) eq = std::tolower(static_cast<unsigned char>(n[i])) ==
                                                            std::tolower(static_cast<unsigned char>(name[i]));
        if (eq) {
            std::string_view t = v;
            while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
            return std::string(t);
        }
    }
    return {};
}

std::string line_of(std::string_view text, std::size_t index) {
    std::size_t pos = 0;
    for (std::size_t i = 0; i < index; ++i) {
        pos = text.find('\n', pos);
        if (pos == std::string_view::npos) return {};
        ++pos;
    }
    return std::string(text.substr(pos, text.find('\n', pos) - pos));
}

// "2015-08-30T12:36:00Z"
clock_time parse_iso(std::string_view s) {
    auto num = [&](std::size_t off, std::size_t len) { return std::stoi(std::string(s.substr(off, len))); };
    using namespace std::chrono;
    auto const day = sys_days{year{num(0, 4)} / month{static_cast<unsigned>(num(5, 2))} /
                              std::chrono::day{static_cast<unsigned>(num(8, 2))}};
    return clock_time{day + hours{num(11, 2)} + minutes{num(14, 2)} + seconds{num(17, 2)}};
}

std::string json_string(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

bool json_bool(boost::json::object const& o, std::string_view key, bool def) {
    auto const* v = o.if_contains(key);
    return v != nullptr && v->is_bool() ? v->as_bool() : def;
}

// Path and canonicalised query of a target, to compare presigned targets independent of
// parameter order and of how the expected file spelled raw bytes.
std::pair<std::string, std::string> split_target_params(std::string_view target) {
    std::size_t const q = target.find('?');
    std::string_view const query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    return {std::string(target.substr(0, q)), baton::aws::canonical_query_string(query)};
}

// BATON_SHARED_DIR (set by `meson test`), else a shared/ folder beside the working directory
// or one of its ancestors, so running the test binary by hand still checks the vectors.
std::optional<fs::path> sigv4_root() {
    if (auto shared = test_common::shared_dir()) return *shared / "testdata" / "sigv4";
    std::error_code ec;
    fs::path dir = fs::current_path(ec);
    for (int i = 0; !ec && i < 4 && !dir.empty(); ++i, dir = dir.parent_path()) {
        fs::path const candidate = dir / ".." / "shared" / "testdata" / "sigv4";
        std::error_code probe;
        if (fs::is_directory(candidate, probe)) return fs::weakly_canonical(candidate, probe);
        if (dir == dir.parent_path()) break;
    }
    return std::nullopt;
}

std::optional<fs::path> sigv4_dir(char const* family) {
    static std::optional<fs::path> const root = sigv4_root();
    if (!root) return std::nullopt;
    fs::path p = *root / family;
    if (!fs::is_directory(p)) return std::nullopt;
    return p;
}

credentials suite_credentials() {
    return {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", std::nullopt};
}

credentials s3_docs_credentials() {
    return {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", std::nullopt};
}

std::string signature_of(std::string_view authorization) {
    std::size_t const p = authorization.find("Signature=");
    return p == std::string_view::npos ? std::string() : std::string(authorization.substr(p + 10));
}

std::vector<fs::path> sorted_dirs(fs::path const& root) {
    std::vector<fs::path> out;
    for (auto const& e : fs::directory_iterator(root))
        if (e.is_directory()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// ------------------------------------------------------------------ known-answer fixtures

constexpr std::string_view peer_body =
    R"json({"TableName": "peer-floor", "Item": {"id": {"S": "lock-key-0001"}, "owner": {"S": "host-a:1234"}, "lease_ms": {"N": "10000"}}, "ConditionExpression": "attribute_not_exists(id)"})json";

http::request<http::string_body> dynamodb_put_item() {
    http::request<http::string_body> req{http::verb::post, "/", 11};
    req.set(http::field::host, "dynamodb.us-east-1.amazonaws.com");
    req.set(http::field::content_type, "application/x-amz-json-1.0");
    req.set("x-amz-target", "DynamoDB_20120810.PutItem");
    req.body() = std::string(peer_body);
    req.prepare_payload();
    return req;
}

clock_time at(int y, unsigned m, unsigned d) {
    using namespace std::chrono;
    return clock_time{sys_days{year{y} / month{m} / day{d}}};
}

} // namespace

TEST_SUITE("sigv4") {

// ------------------------------------------------------------------ conformance: shared vectors

TEST_CASE("conformance: aws4_testsuite-classic") {
    auto root = sigv4_dir("aws4_testsuite-classic");
    if (!root) {
        MESSAGE("sigv4 classic suite skipped: ../shared absent");
        return;
    }
    int cases = 0;
    int passed = 0;
    std::vector<fs::path> reqs;
    for (auto const& e : fs::recursive_directory_iterator(*root))
        if (e.is_regular_file() && e.path().extension() == ".req") reqs.push_back(e.path());
    std::sort(reqs.begin(), reqs.end());
    for (auto const& req_path : reqs) {
        std::string const name = req_path.stem().string();
        fs::path const base = req_path.parent_path() / name;
        INFO("case: ", name);
        ++cases;
        raw_request const raw = parse_raw(read_file(req_path));
        std::string const creq = read_expected(base.string() + ".creq");
        credentials creds = suite_credentials();
        signing_params params = signing_params::for_service("service", "us-east-1");
        // Session token: in the .req (signed), or only in the .sreq (signed if the .creq has it).
        creds.session_token = header_value(raw, "X-Amz-Security-Token");
        if (creds.session_token.empty()) {
            raw_request const sreq = parse_raw(read_file(base.string() + ".sreq"));
            creds.session_token = header_value(sreq, "X-Amz-Security-Token");
            if (!creds.session_token.empty() && creq.find("x-amz-security-token:") == std::string::npos)
                params.sign_session_token = false;
        }
        auto req = to_beast(raw);
        signing_result steps;
        auto const ec = baton::aws::sign_request(req, creds, params, parse_iso("2015-08-30T12:36:00Z"), &steps);
        std::string const authz = read_expected(base.string() + ".authz");
        bool ok = !ec;
        ok &= steps.canonical_request == creq;
        ok &= steps.string_to_sign == read_expected(base.string() + ".sts");
        ok &= steps.signature == signature_of(authz);
        ok &= steps.authorization == authz;
        ok &= std::string(req[http::field::authorization]) == authz;
        if (!creds.session_token.empty())
            ok &= std::string(req["X-Amz-Security-Token"]) == creds.session_token;
        CHECK_MESSAGE(!ec, name);
        CHECK_MESSAGE(steps.canonical_request == creq, name);
        CHECK_MESSAGE(steps.string_to_sign == read_expected(base.string() + ".sts"), name);
        CHECK_MESSAGE(steps.signature == signature_of(authz), name);
        CHECK_MESSAGE(std::string(req[http::field::authorization]) == authz, name);
        if (ok) ++passed;
    }
    MESSAGE("aws4_testsuite-classic: ", passed, "/", cases, " cases pass");
    CHECK(cases >= 34);
    CHECK(passed == cases);
}

TEST_CASE("conformance: crt-v4 (header and query variants)") {
    auto root = sigv4_dir("crt-v4");
    if (!root) {
        MESSAGE("sigv4 crt-v4 suite skipped: ../shared absent");
        return;
    }
    int cases = 0;
    int header_passed = 0;
    int query_passed = 0;
    for (auto const& dir : sorted_dirs(*root)) {
        if (!fs::exists(dir / "context.json")) continue;
        std::string const name = dir.filename().string();
        INFO("case: ", name);
        ++cases;
        auto const ctx = boost::json::parse(read_file(dir / "context.json")).as_object();
        auto const& jc = ctx.at("credentials").as_object();
        credentials const creds{json_string(jc, "access_key_id"), json_string(jc, "secret_access_key"),
                                json_string(jc, "token"), std::nullopt};
        signing_params params =
            signing_params::for_service(json_string(ctx, "service"), json_string(ctx, "region"));
        params.normalize_path = json_bool(ctx, "normalize", true);
        params.double_encode = true;
        params.content_sha256_header = json_bool(ctx, "sign_body", false);
        params.sign_session_token = !json_bool(ctx, "omit_session_token", false);
        clock_time const now = parse_iso(json_string(ctx, "timestamp"));
        raw_request const raw = parse_raw(read_file(dir / "request.txt"));

        {   // Authorization header variant
            auto req = to_beast(raw);
            signing_result steps;
            auto const ec = baton::aws::sign_request(req, creds, params, now, &steps);
            auto const expected_creq = read_expected(dir / "header-canonical-request.txt");
            auto const expected_sts = read_expected(dir / "header-string-to-sign.txt");
            auto const expected_sig = read_expected(dir / "header-signature.txt");
            raw_request const signed_req = parse_raw(read_file(dir / "header-signed-request.txt"));
            CHECK_MESSAGE(!ec, name, " (header)");
            CHECK_MESSAGE(steps.canonical_request == expected_creq, name, " (header)");
            CHECK_MESSAGE(steps.string_to_sign == expected_sts, name, " (header)");
            CHECK_MESSAGE(steps.signature == expected_sig, name, " (header)");
            CHECK_MESSAGE(std::string(req[http::field::authorization]) == header_value(signed_req, "Authorization"),
                          name, " (header)");
            if (!ec && steps.canonical_request == expected_creq && steps.string_to_sign == expected_sts &&
                steps.signature == expected_sig)
                ++header_passed;
        }
        {   // presigned (query) variant
            auto const req = to_beast(raw);
            signing_result steps;
            std::string target;
            auto const expires = std::chrono::seconds(ctx.at("expiration_in_seconds").to_number<long long>());
            auto const ec = baton::aws::presign_url(req, creds, params, now, expires, target, &steps);
            auto const expected_creq = read_expected(dir / "query-canonical-request.txt");
            auto const expected_sts = read_expected(dir / "query-string-to-sign.txt");
            auto const expected_sig = read_expected(dir / "query-signature.txt");
            raw_request const signed_req = parse_raw(read_file(dir / "query-signed-request.txt"));
            CHECK_MESSAGE(!ec, name, " (query)");
            CHECK_MESSAGE(steps.canonical_request == expected_creq, name, " (query)");
            CHECK_MESSAGE(steps.string_to_sign == expected_sts, name, " (query)");
            CHECK_MESSAGE(steps.signature == expected_sig, name, " (query)");
            CHECK_MESSAGE(split_target_params(target) == split_target_params(signed_req.target), name, " (query)");
            if (!ec && steps.canonical_request == expected_creq && steps.string_to_sign == expected_sts &&
                steps.signature == expected_sig && split_target_params(target) == split_target_params(signed_req.target))
                ++query_passed;
        }
    }
    MESSAGE("crt-v4: ", cases, " cases, header ", header_passed, "/", cases, ", query ", query_passed, "/", cases);
    CHECK(cases >= 38);
    CHECK(header_passed == cases);
    CHECK(query_passed == cases);
}

TEST_CASE("conformance: crt-v4-smithy-extras (canonical URI line only)") {
    auto root = sigv4_dir("crt-v4-smithy-extras");
    if (!root) {
        MESSAGE("sigv4 smithy extras skipped: ../shared absent");
        return;
    }
    int cases = 0;
    int passed = 0;
    for (auto const& dir : sorted_dirs(*root)) {
        std::string const name = dir.filename().string();
        INFO("case: ", name);
        ++cases;
        auto req = to_beast(parse_raw(read_file(dir / "request.txt")));
        signing_result steps;
        auto const ec = baton::aws::sign_request(req, suite_credentials(),
                                                 signing_params::for_service("service", "us-east-1"),
                                                 parse_iso("2015-08-30T12:36:00Z"), &steps);
        std::string const expected = line_of(read_expected(dir / "header-canonical-request.txt"), 1);
        CHECK_MESSAGE(!ec, name);
        CHECK_MESSAGE(line_of(steps.canonical_request, 1) == expected, name);
        if (!ec && line_of(steps.canonical_request, 1) == expected) ++passed;
    }
    MESSAGE("crt-v4-smithy-extras: ", passed, "/", cases, " canonical URIs match");
    CHECK(cases >= 2);
    CHECK(passed == cases);
}

TEST_CASE("conformance: s3-docs-examples (header, presigned, chunked)") {
    auto root = sigv4_dir("s3-docs-examples");
    if (!root) {
        MESSAGE("sigv4 S3 docs examples skipped: ../shared absent");
        return;
    }
    int cases = 0;
    int passed = 0;
    int chunks = 0;
    int chunks_passed = 0;
    for (auto const& dir : sorted_dirs(*root)) {
        std::string const name = dir.filename().string();
        INFO("case: ", name);
        ++cases;
        auto const ctx = boost::json::parse(read_file(dir / "context.json")).as_object();
        auto const& jc = ctx.at("credentials").as_object();
        credentials const creds{json_string(jc, "access_key_id"), json_string(jc, "secret_access_key"),
                                json_string(jc, "token"), std::nullopt};
        signing_params params = signing_params::for_s3(json_string(ctx, "region"));
        std::string const payload = json_string(ctx, "payload_hash");
        if (payload == "UNSIGNED-PAYLOAD") {
            params.payload = baton::aws::payload_mode::unsigned_payload;
        } else if (!payload.empty()) {
            params.payload = baton::aws::payload_mode::precomputed;
            params.payload_hash = payload;
        }
        clock_time const now = parse_iso(json_string(ctx, "timestamp"));
        fs::path const base = dir / name;
        raw_request const raw = parse_raw(read_file(base.string() + ".req"));
        std::string const expected_creq = read_expected(base.string() + ".creq");
        std::string const expected_sts = read_expected(base.string() + ".sts");
        std::string const expected_sig = read_expected(base.string() + ".signature");
        signing_result steps;
        bool ok = false;
        if (json_bool(ctx, "presign", false)) {
            auto const req = to_beast(raw);
            std::string target;
            auto const ec = baton::aws::presign_url(
                req, creds, params, now, std::chrono::seconds(ctx.at("expires_in").to_number<long long>()), target,
                &steps);
            std::string const url = "https://" + header_value(raw, "Host") + target;
            CHECK_MESSAGE(!ec, name);
            CHECK_MESSAGE(url == read_expected(base.string() + ".url"), name);
            ok = !ec && url == read_expected(base.string() + ".url");
        } else {
            auto req = to_beast(raw);
            auto const ec = baton::aws::sign_request(req, creds, params, now, &steps);
            std::string const authz = read_expected(base.string() + ".authz");
            CHECK_MESSAGE(!ec, name);
            CHECK_MESSAGE(steps.authorization == authz, name);
            ok = !ec && steps.authorization == authz;
        }
        CHECK_MESSAGE(steps.canonical_request == expected_creq, name);
        CHECK_MESSAGE(steps.string_to_sign == expected_sts, name);
        CHECK_MESSAGE(steps.signature == expected_sig, name);
        ok = ok && steps.canonical_request == expected_creq && steps.string_to_sign == expected_sts &&
             steps.signature == expected_sig;
        if (ok) ++passed;

        // Chunked upload: chunk files are named chunkN-<size>bytes.{sts,signature}.
        std::vector<fs::path> chunk_files;
        for (auto const& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".signature" && e.path().stem().string().rfind("chunk", 0) == 0 &&
                e.path().stem() != name)
                chunk_files.push_back(e.path());
        std::sort(chunk_files.begin(), chunk_files.end());
        if (chunk_files.empty()) continue;
        std::string amz_date = line_of(steps.string_to_sign, 1);
        std::string scope = line_of(steps.string_to_sign, 2);
        auto const key = baton::aws::derive_signing_key(creds.secret_access_key, amz_date.substr(0, 8),
                                                        params.region, params.service);
        baton::aws::chunk_signer chain(creds, params, now, steps.signature);
        std::string previous = steps.signature;
        for (auto const& f : chunk_files) {
            std::string const stem = f.stem().string(); // chunk1-65536bytes
            INFO("chunk: ", stem);
            ++chunks;
            std::size_t const dash = stem.find('-');
            std::size_t const size = std::stoul(stem.substr(dash + 1));
            std::string const data(size, 'a');
            std::string sts;
            std::string const sig = baton::aws::sign_chunk(key, amz_date, scope, previous, data, &sts);
            std::string const chained = chain.next(data);
            std::string const expected_chunk_sig = read_expected(f);
            std::string const expected_chunk_sts = read_expected(dir / (stem + ".sts"));
            CHECK_MESSAGE(sig == expected_chunk_sig, stem);
            CHECK_MESSAGE(chained == expected_chunk_sig, stem);
            CHECK_MESSAGE(sts == expected_chunk_sts, stem);
            if (sig == expected_chunk_sig && chained == sig && sts == expected_chunk_sts) ++chunks_passed;
            previous = sig;
        }
    }
    MESSAGE("s3-docs-examples: ", passed, "/", cases, " requests, ", chunks_passed, "/", chunks, " chunk signatures");
    CHECK(cases >= 6);
    CHECK(passed == cases);
    CHECK(chunks >= 3);
    CHECK(chunks_passed == chunks);
}

TEST_CASE("conformance: sdk-vectors (aws-sdk-go v1 DynamoDB)") {
    auto root = sigv4_dir("sdk-vectors");
    if (!root) {
        MESSAGE("sigv4 SDK vectors skipped: ../shared absent");
        return;
    }
    int cases = 0;
    int passed = 0;
    for (auto const& dir : sorted_dirs(*root)) {
        std::string const name = dir.filename().string();
        INFO("case: ", name);
        ++cases;
        auto const ctx = boost::json::parse(read_file(dir / "context.json")).as_object();
        auto const& jc = ctx.at("credentials").as_object();
        credentials const creds{json_string(jc, "access_key_id"), json_string(jc, "secret_access_key"),
                                json_string(jc, "token"), std::nullopt};
        signing_params params =
            signing_params::for_service(json_string(ctx, "service"), json_string(ctx, "region"));
        params.normalize_path = json_bool(ctx, "normalize_path", true);
        fs::path const base = dir / name;
        auto req = to_beast(parse_raw(read_file(base.string() + ".req")));
        signing_result steps;
        auto const ec = baton::aws::sign_request(req, creds, params, parse_iso(json_string(ctx, "timestamp")), &steps);
        std::string const creq = read_expected(base.string() + ".creq");
        std::string const sts = read_expected(base.string() + ".sts");
        std::string const sig = read_expected(base.string() + ".signature");
        std::string const authz = read_expected(base.string() + ".authz");
        CHECK_MESSAGE(!ec, name);
        CHECK_MESSAGE(steps.canonical_request == creq, name);
        CHECK_MESSAGE(steps.string_to_sign == sts, name);
        CHECK_MESSAGE(steps.signature == sig, name);
        CHECK_MESSAGE(steps.authorization == authz, name);
        if (!ec && steps.canonical_request == creq && steps.string_to_sign == sts && steps.signature == sig &&
            steps.authorization == authz)
            ++passed;
    }
    MESSAGE("sdk-vectors: ", passed, "/", cases, " cases pass");
    CHECK(cases >= 1);
    CHECK(passed == cases);
}

// ------------------------------------------------------------------ known answers (no shared data)

TEST_CASE("known answer: DynamoDB PutItem (peer signers agree)") {
    auto req = dynamodb_put_item();
    REQUIRE(req.body().size() == 177);
    signing_result steps;
    auto const ec = baton::aws::sign_request(req, suite_credentials(),
                                             signing_params::for_service("dynamodb", "us-east-1"),
                                             at(2025, 1, 1), &steps);
    REQUIRE_FALSE(ec);
    CHECK(steps.signed_headers == "content-length;content-type;host;x-amz-date;x-amz-target");
    CHECK(line_of(steps.canonical_request, 10).substr(0, 8) == "ed50d85a");
    CHECK(steps.signature == "b75c4c8c6ffa8460e175bdd72e3fa9bf8ea0c37f8196590112bc75b645aa9770");
    CHECK(std::string(req["X-Amz-Date"]) == "20250101T000000Z");
    CHECK(req.find("x-amz-content-sha256") == req.end());

    // The caching signer gives the same answer.
    baton::aws::sigv4_signer signer;
    auto again = dynamodb_put_item();
    REQUIRE_FALSE(signer.sign(again, suite_credentials(), signing_params::for_service("dynamodb", "us-east-1"),
                              at(2025, 1, 1)));
    CHECK(again[http::field::authorization] == req[http::field::authorization]);
}

TEST_CASE("known answer: S3 documentation examples") {
    auto const creds = s3_docs_credentials();
    auto const params = signing_params::for_s3("us-east-1");
    auto const when = at(2013, 5, 24);

    SUBCASE("GET object with Range") {
        http::request<http::string_body> req{http::verb::get, "/test.txt", 11};
        req.set(http::field::host, "examplebucket.s3.amazonaws.com");
        req.set(http::field::range, "bytes=0-9");
        signing_result steps;
        REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, when, &steps));
        CHECK(steps.canonical_request ==
              "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
              "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
              "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        CHECK(steps.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
        CHECK(std::string(req["x-amz-content-sha256"]) ==
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
    SUBCASE("PUT object with a $ in the key and a hashed body") {
        http::request<http::string_body> req{http::verb::put, "/test$file.text", 11};
        req.set(http::field::host, "examplebucket.s3.amazonaws.com");
        req.set(http::field::date, "Fri, 24 May 2013 00:00:00 GMT");
        req.set("x-amz-storage-class", "REDUCED_REDUNDANCY");
        req.body() = "Welcome to Amazon S3.";
        signing_result steps;
        REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, when, &steps));
        CHECK(line_of(steps.canonical_request, 1) == "/test%24file.text");
        CHECK(steps.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    }
    SUBCASE("GET bucket lifecycle and list objects (query strings)") {
        http::request<http::string_body> req{http::verb::get, "/?lifecycle", 11};
        req.set(http::field::host, "examplebucket.s3.amazonaws.com");
        signing_result steps;
        REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, when, &steps));
        CHECK(line_of(steps.canonical_request, 2) == "lifecycle=");
        CHECK(steps.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
        req.target("/?max-keys=2&prefix=J");
        REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, when, &steps));
        CHECK(steps.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    }
    SUBCASE("presigned GET") {
        http::request<http::empty_body> req{http::verb::get, "/test.txt", 11};
        req.set(http::field::host, "examplebucket.s3.amazonaws.com");
        auto p = params;
        p.payload = baton::aws::payload_mode::unsigned_payload;
        std::string target;
        signing_result steps;
        REQUIRE_FALSE(baton::aws::presign_url(req, creds, p, when, std::chrono::hours(24), target, &steps));
        CHECK(steps.signature == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
        CHECK(target ==
              "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
              "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders="
              "host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
        CHECK(req.find(http::field::authorization) == req.end());
    }
    SUBCASE("chunked upload: seed and chunk chain") {
        http::request<http::empty_body> req{http::verb::put, "/examplebucket/chunkObject.txt", 11};
        req.set(http::field::host, "s3.amazonaws.com");
        req.set("x-amz-storage-class", "REDUCED_REDUNDANCY");
        req.set(http::field::content_encoding, "aws-chunked");
        req.set("x-amz-decoded-content-length", "66560");
        req.set(http::field::content_length, "66824");
        auto p = params;
        p.payload = baton::aws::payload_mode::precomputed;
        p.payload_hash = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
        signing_result steps;
        REQUIRE_FALSE(baton::aws::sign_request(req, creds, p, when, &steps));
        CHECK(steps.signature == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
        baton::aws::chunk_signer chain(creds, p, when, steps.signature);
        CHECK(chain.next(std::string(65536, 'a')) == "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648");
        CHECK(chain.next(std::string(1024, 'a')) == "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497");
        CHECK(chain.next({}) == "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");
    }
}

// ------------------------------------------------------------------ canonicalisation rules

TEST_CASE("canonical URI: S3 encodes once and keeps dots and slashes; others normalise and double-encode") {
    auto const s3 = signing_params::for_s3("us-east-1");
    auto const ddb = signing_params::for_service("dynamodb", "us-east-1");
    CHECK(baton::aws::canonical_uri("/a//b/./c/../d", s3) == "/a//b/./c/../d");
    CHECK(baton::aws::canonical_uri("/a//b/./c/../d", ddb) == "/a/b/d");
    CHECK(baton::aws::canonical_uri("/a/b/", ddb) == "/a/b/");
    CHECK(baton::aws::canonical_uri("/a/b/..", ddb) == "/a");
    CHECK(baton::aws::canonical_uri("", ddb) == "/");
    CHECK(baton::aws::canonical_uri("/key%3Aname", s3) == "/key%3Aname");
    CHECK(baton::aws::canonical_uri("/key%3aname", s3) == "/key%3Aname");
    CHECK(baton::aws::canonical_uri("/key%3Aname", ddb) == "/key%253Aname");
    CHECK(baton::aws::canonical_uri("/a+b c", s3) == "/a%2Bb%20c");
    CHECK(baton::aws::canonical_uri("/dir%2Fkey", s3) == "/dir%2Fkey");
    CHECK(baton::aws::canonical_uri("/100%", s3) == "/100%25");
    CHECK(baton::aws::canonical_uri("/\xE1\x88\xB4", s3) == "/%E1%88%B4");
}

TEST_CASE("canonical query: decode, encode once, sort by name then value") {
    CHECK(baton::aws::canonical_query_string("") == "");
    CHECK(baton::aws::canonical_query_string("b=2&a=1") == "a=1&b=2");
    CHECK(baton::aws::canonical_query_string("a=2&a=1") == "a=1&a=2");
    CHECK(baton::aws::canonical_query_string("acl") == "acl=");
    CHECK(baton::aws::canonical_query_string("p=a/b c+d") == "p=a%2Fb%20c%2Bd");
    CHECK(baton::aws::canonical_query_string("p=a%2fb%20c") == "p=a%2Fb%20c");
    CHECK(baton::aws::canonical_query_string("p=-._~") == "p=-._~");
    CHECK(baton::aws::canonical_query_string("x=1&&y") == "x=1&y=");
    CHECK(baton::aws::canonical_query_string("k=v=w") == "k=v%3Dw");
    CHECK(baton::aws::canonical_query_string("k=%zz") == "k=%25zz");
}

TEST_CASE("headers: trimmed, collapsed, joined in arrival order, sorted; hop-by-hop unsigned") {
    http::request<http::string_body> req{http::verb::get, "/", 11};
    req.set(http::field::host, "example.amazonaws.com");
    req.insert("My-Header", "  b   c  ");
    req.insert("my-header", "\"x   y\"");
    req.insert("A-Header", "1\t\t2");
    req.set(http::field::user_agent, "baton/0.1");
    req.set(http::field::connection, "keep-alive");
    signing_result steps;
    REQUIRE_FALSE(baton::aws::sign_request(req, suite_credentials(), signing_params::for_service("s", "r"),
                                           at(2015, 8, 30), &steps));
    CHECK(steps.signed_headers == "a-header;host;my-header;x-amz-date");
    CHECK(steps.canonical_request.find("a-header:1 2\n") != std::string::npos);
    CHECK(steps.canonical_request.find("my-header:b c,\"x y\"\n") != std::string::npos);
}

TEST_CASE("re-signing replaces the signer's headers instead of duplicating them") {
    auto req = dynamodb_put_item();
    auto creds = suite_credentials();
    creds.session_token = "TOKEN";
    auto const params = signing_params::for_s3("us-east-1");
    REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, at(2025, 1, 1)));
    REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, at(2025, 1, 2)));
    auto count = [&](std::string_view name) { return std::distance(req.equal_range(name).first, req.equal_range(name).second); };
    CHECK(count("authorization") == 1);
    CHECK(count("x-amz-date") == 1);
    CHECK(count("x-amz-security-token") == 1);
    CHECK(count("x-amz-content-sha256") == 1);
    CHECK(std::string(req["x-amz-date"]) == "20250102T000000Z");
    CHECK(std::string(req[http::field::authorization]).find("SignedHeaders=content-length;content-type;host;"
                                                            "x-amz-content-sha256;x-amz-date;x-amz-security-token;"
                                                            "x-amz-target,") != std::string::npos);
}

TEST_CASE("a failed re-signing leaves no earlier signature behind") {
    auto req = dynamodb_put_item();
    auto const params = signing_params::for_service("dynamodb", "us-east-1");
    baton::aws::sigv4_signer signer;
    REQUIRE_FALSE(signer.sign(req, suite_credentials(), params, at(2025, 1, 1)));
    REQUIRE(req.find(http::field::authorization) != req.end());
    auto bad = params;
    bad.region = "us east";
    CHECK(signer.sign(req, suite_credentials(), bad, at(2025, 1, 1)) == baton::errc::invalid_argument);
    CHECK(req.find(http::field::authorization) == req.end());
}

TEST_CASE("session token added after signing when not signed") {
    auto req = dynamodb_put_item();
    auto creds = suite_credentials();
    creds.session_token = "TOKEN";
    auto params = signing_params::for_service("sts", "us-east-1");
    params.sign_session_token = false;
    signing_result steps;
    REQUIRE_FALSE(baton::aws::sign_request(req, creds, params, at(2025, 1, 1), &steps));
    CHECK(steps.signed_headers.find("x-amz-security-token") == std::string::npos);
    CHECK(std::string(req["X-Amz-Security-Token"]) == "TOKEN");
}

TEST_CASE("bodies other than string_body") {
    auto const params = signing_params::for_service("dynamodb", "us-east-1");
    http::request<http::vector_body<char>> vreq{http::verb::post, "/", 11};
    vreq.set(http::field::host, "dynamodb.us-east-1.amazonaws.com");
    vreq.set(http::field::content_type, "application/x-amz-json-1.0");
    vreq.set("x-amz-target", "DynamoDB_20120810.PutItem");
    vreq.body().assign(peer_body.begin(), peer_body.end());
    vreq.prepare_payload();
    signing_result steps;
    REQUIRE_FALSE(baton::aws::sign_request(vreq, suite_credentials(), params, at(2025, 1, 1), &steps));
    CHECK(steps.signature == "b75c4c8c6ffa8460e175bdd72e3fa9bf8ea0c37f8196590112bc75b645aa9770");

    http::request<http::empty_body> ereq{http::verb::get, "/", 11};
    ereq.set(http::field::host, "example.amazonaws.com");
    REQUIRE_FALSE(baton::aws::sign_request(ereq, suite_credentials(), signing_params::for_service("service", "us-east-1"),
                                           parse_iso("2015-08-30T12:36:00Z"), &steps));
    CHECK(steps.signature == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

// ------------------------------------------------------------------ key cache, signer policy

TEST_CASE("sigv4_signer derives the signing key once per day, region and service") {
    baton::aws::sigv4_signer signer;
    auto const params = signing_params::for_service("dynamodb", "us-east-1");
    auto const creds = suite_credentials();
    for (int i = 0; i < 5; ++i) {
        auto req = dynamodb_put_item();
        REQUIRE_FALSE(signer.sign(req, creds, params, at(2025, 1, 1) + std::chrono::seconds(i)));
    }
    CHECK(signer.cache().derivations() == 1);
    auto req = dynamodb_put_item();
    REQUIRE_FALSE(signer.sign(req, creds, params, at(2025, 1, 2)));
    CHECK(signer.cache().derivations() == 2);
    REQUIRE_FALSE(signer.sign(req, creds, signing_params::for_s3("us-east-1"), at(2025, 1, 2)));
    CHECK(signer.cache().derivations() == 3);
    auto other = creds;
    other.secret_access_key = "another-secret";
    REQUIRE_FALSE(signer.sign(req, other, params, at(2025, 1, 2)));
    CHECK(signer.cache().derivations() == 4);
    auto copy = signer; // copies share the cache
    REQUIRE_FALSE(copy.sign(req, creds, params, at(2025, 1, 2)));
    CHECK(signer.cache().derivations() == 4);
    signer.cache().clear();
    REQUIRE_FALSE(copy.sign(req, creds, params, at(2025, 1, 2)));
    CHECK(signer.cache().derivations() == 5);
}

TEST_CASE("sigv4_signer is safe to share between threads" * doctest::test_suite("concurrency")) {
    baton::aws::sigv4_signer signer;
    auto const params = signing_params::for_service("dynamodb", "us-east-1");
    std::vector<std::string> auths(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < auths.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                auto req = dynamodb_put_item();
                if (signer.sign(req, suite_credentials(), params, at(2025, 1, 1))) return;
                auths[t] = std::string(req[http::field::authorization]);
            }
        });
    }
    for (auto& th : threads) th.join();
    for (auto const& a : auths)
        CHECK(signature_of(a) == "b75c4c8c6ffa8460e175bdd72e3fa9bf8ea0c37f8196590112bc75b645aa9770");
}

TEST_CASE("anonymous_signer leaves the request alone") {
    static_assert(baton::aws::request_signer<baton::anonymous_signer>);
    static_assert(baton::aws::request_signer<baton::aws::sigv4_signer>);
    auto req = dynamodb_put_item();
    auto const before = std::distance(req.begin(), req.end());
    baton::anonymous_signer s;
    CHECK_FALSE(s.sign(req, credentials{}, signing_params{}, at(2025, 1, 1)));
    CHECK(std::distance(req.begin(), req.end()) == before);
    CHECK(req.find(http::field::authorization) == req.end());
}

// ------------------------------------------------------------------ errors

TEST_CASE("invalid input is reported, not signed") {
    auto const creds = suite_credentials();
    auto const s3 = signing_params::for_s3("us-east-1");
    http::request<http::empty_body> req{http::verb::get, "/k", 11};
    req.set(http::field::host, "b.s3.amazonaws.com");
    std::string target;
    auto p = s3;
    p.payload = baton::aws::payload_mode::unsigned_payload;

    CHECK_FALSE(baton::aws::presign_url(req, creds, p, at(2025, 1, 1), baton::aws::max_presign_expiry, target));
    CHECK(baton::aws::presign_url(req, creds, p, at(2025, 1, 1), baton::aws::max_presign_expiry + std::chrono::seconds(1),
                                  target) == baton::errc::invalid_argument);
    CHECK(baton::aws::presign_url(req, creds, p, at(2025, 1, 1), std::chrono::seconds(0), target) ==
          baton::errc::invalid_argument);

    auto no_region = s3;
    no_region.region.clear();
    CHECK(baton::aws::sign_request(req, creds, no_region, at(2025, 1, 1)) == baton::errc::invalid_argument);
    auto bad_region = s3;
    bad_region.region = "us-east-1\r\nX-Evil: 1";
    CHECK(baton::aws::sign_request(req, creds, bad_region, at(2025, 1, 1)) == baton::errc::invalid_argument);
    auto bad_hash = s3;
    bad_hash.payload = baton::aws::payload_mode::precomputed;
    CHECK(baton::aws::sign_request(req, creds, bad_hash, at(2025, 1, 1)) == baton::errc::invalid_argument);
    auto bad_token = creds;
    bad_token.session_token = "abc\r\ndef";
    CHECK(baton::aws::sign_request(req, bad_token, s3, at(2025, 1, 1)) == baton::errc::invalid_argument);
    CHECK(baton::aws::sign_request(req, credentials{}, s3, at(2025, 1, 1)) == baton::errc::invalid_argument);
    CHECK(req.find(http::field::authorization) == req.end());

    http::request<http::empty_body> no_host{http::verb::get, "/k", 11};
    CHECK(baton::aws::sign_request(no_host, creds, s3, at(2025, 1, 1)) == baton::errc::invalid_argument);
    CHECK(no_host.find(http::field::authorization) == no_host.end());
    CHECK(no_host.find("x-amz-date") == no_host.end());

    // A body that cannot be read as bytes can only be signed without hashing it.
    http::request<http::buffer_body> breq{http::verb::put, "/k", 11};
    breq.set(http::field::host, "b.s3.amazonaws.com");
    CHECK(baton::aws::sign_request(breq, creds, s3, at(2025, 1, 1)) == baton::errc::invalid_argument);
    CHECK_FALSE(baton::aws::sign_request(breq, creds, p, at(2025, 1, 1)));
}

// ------------------------------------------------------------------ secrets

TEST_CASE("secrets never appear in redacted(), error messages or signed output") {
    credentials creds = suite_credentials();
    creds.session_token = "SESSIONTOKEN123";
    std::string const secret = creds.secret_access_key;

    std::string const r = creds.redacted();
    CHECK(r.find("AKIDEXAMPLE") != std::string::npos);
    CHECK(r.find(secret) == std::string::npos);
    CHECK(r.find("wJalr") == std::string::npos);
    CHECK(r.find("SESSIONTOKEN123") == std::string::npos);

    http::request<http::empty_body> bad{http::verb::get, "/k", 11}; // no host
    auto const ec = baton::aws::sign_request(bad, creds, signing_params::for_s3("us-east-1"), at(2025, 1, 1));
    REQUIRE(ec);
    CHECK(ec.message().find(secret) == std::string::npos);
    CHECK(ec.message().find("wJalr") == std::string::npos);
    std::string unused_target;
    baton::error_code const ec2 = baton::aws::presign_url(bad, creds, signing_params::for_s3("us-east-1"),
                                                          at(2025, 1, 1), std::chrono::hours(24 * 8), unused_target);
    REQUIRE(ec2);
    CHECK(ec2.message().find("wJalr") == std::string::npos);

    auto req = dynamodb_put_item();
    signing_result steps;
    REQUIRE_FALSE(baton::aws::sign_request(req, creds, signing_params::for_service("dynamodb", "us-east-1"),
                                           at(2025, 1, 1), &steps));
    for (auto const& f : req) CHECK(std::string(f.value()).find("wJalr") == std::string::npos);
    CHECK(steps.canonical_request.find("wJalr") == std::string::npos);
    CHECK(steps.string_to_sign.find("wJalr") == std::string::npos);
    CHECK(steps.authorization.find("wJalr") == std::string::npos);

    std::string target;
    http::request<http::empty_body> get{http::verb::get, "/k", 11};
    get.set(http::field::host, "b.s3.amazonaws.com");
    REQUIRE_FALSE(baton::aws::presign_url(get, creds, signing_params::for_s3("us-east-1"), at(2025, 1, 1),
                                          std::chrono::hours(1), target));
    CHECK(target.find("wJalr") == std::string::npos);
    CHECK(target.find("X-Amz-Security-Token=SESSIONTOKEN123") != std::string::npos);
}

}
