// SigV4 signing throughput on one core, next to the raw crypto floor for the same bytes.
//
//   g++ -O2 -std=c++20 -I include bench/sigv4_bench.cpp -lssl -lcrypto -lboost_url -o /tmp/sigbench
//   taskset -c 1 /tmp/sigbench [seconds-per-run]
//
// Prints one JSON object per line. Cases:
//   dynamodb_putitem  POST / with the peers' 177-byte PutItem body (see ../shared/peers/d_sigv4.js)
//   s3_put            PUT /bucket/key with the same 177-byte body, S3 rules (x-amz-content-sha256)
// Modes:
//   resign      sign the same request object again (headers replaced), cached key
//   build+sign  build a fresh request each iteration, then sign (what the peers measure)
//   floor       SHA-256(payload) + SHA-256(canonical request) + one HMAC-SHA256 under a cached
//               key, with prefetched EVP_MD and reused contexts: the least any signer must do
// ratio = floor ns / sign ns (1.0 would mean canonicalisation and header handling are free).
#include <baton/aws/sigv4.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace http = boost::beast::http;
using clock_type = std::chrono::steady_clock;

constexpr std::string_view body177 =
    R"json({"TableName": "peer-floor", "Item": {"id": {"S": "lock-key-0001"}, "owner": {"S": "host-a:1234"}, "lease_ms": {"N": "10000"}}, "ConditionExpression": "attribute_not_exists(id)"})json";

baton::aws::credentials const creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", std::nullopt};

http::request<http::string_body> make_dynamodb() {
    http::request<http::string_body> req{http::verb::post, "/", 11};
    req.set(http::field::host, "dynamodb.us-east-1.amazonaws.com");
    req.set(http::field::content_type, "application/x-amz-json-1.0");
    req.set("x-amz-target", "DynamoDB_20120810.PutItem");
    req.body() = std::string(body177);
    req.prepare_payload();
    return req;
}

http::request<http::string_body> make_s3() {
    http::request<http::string_body> req{http::verb::put, "/baton-locks/leases/lock-key-0001", 11};
    req.set(http::field::host, "s3.us-east-1.amazonaws.com");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::if_none_match, "*");
    req.body() = std::string(body177);
    req.prepare_payload();
    return req;
}

// Runs f repeatedly for `seconds`, returns ns per call (median of `runs`).
template <class F>
double measure(F&& f, double seconds, int runs = 5) {
    for (int i = 0; i < 2000; ++i) f(); // warm-up
    std::vector<double> ns;
    for (int r = 0; r < runs; ++r) {
        std::uint64_t n = 0;
        auto const t0 = clock_type::now();
        auto const deadline = t0 + std::chrono::duration_cast<clock_type::duration>(
                                       std::chrono::duration<double>(seconds / runs));
        auto t = t0;
        do {
            for (int k = 0; k < 256; ++k) f();
            n += 256;
            t = clock_type::now();
        } while (t < deadline);
        ns.push_back(std::chrono::duration<double, std::nano>(t - t0).count() / static_cast<double>(n));
    }
    std::sort(ns.begin(), ns.end());
    return ns[ns.size() / 2];
}

// The crypto floor, implemented directly on EVP (independent of baton's own helpers).
struct floor_crypto {
    EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    unsigned char ipad[64]{};
    unsigned char opad[64]{};

    explicit floor_crypto(baton::aws::signing_key const& key) {
        for (int i = 0; i < 64; ++i) {
            unsigned char const k = i < 32 ? key.bytes[static_cast<std::size_t>(i)] : 0;
            ipad[i] = static_cast<unsigned char>(k ^ 0x36);
            opad[i] = static_cast<unsigned char>(k ^ 0x5c);
        }
    }
    ~floor_crypto() {
        EVP_MD_CTX_free(ctx);
        EVP_MD_free(md);
    }
    void hash(void const* a, std::size_t an, void const* b, std::size_t bn, unsigned char* out) {
        unsigned len = 0;
        EVP_DigestInit_ex2(ctx, md, nullptr);
        EVP_DigestUpdate(ctx, a, an);
        if (bn != 0) EVP_DigestUpdate(ctx, b, bn);
        EVP_DigestFinal_ex(ctx, out, &len);
    }
    // sha256(payload) + sha256(creq) + HMAC(key, sts)
    unsigned char run(std::string_view payload, std::string_view creq, std::string_view sts) {
        unsigned char h1[32], h2[32], inner[32], mac[32];
        hash(payload.data(), payload.size(), nullptr, 0, h1);
        hash(creq.data(), creq.size(), nullptr, 0, h2);
        hash(ipad, 64, sts.data(), sts.size(), inner);
        hash(opad, 64, inner, 32, mac);
        return static_cast<unsigned char>(h1[0] ^ h2[0] ^ mac[0]);
    }
};

volatile unsigned sink = 0;

void bench_case(char const* name, http::request<http::string_body> (*make)(), baton::aws::signing_params const& params,
                double seconds) {
    auto const now = std::chrono::system_clock::now();
    baton::aws::sigv4_signer signer;

    // Reference strings for the floor, from one real signature.
    auto probe = make();
    baton::aws::signing_result steps;
    if (auto ec = signer.sign(probe, creds, params, now, &steps)) {
        std::printf("{\"bench\":\"sigv4\",\"case\":\"%s\",\"error\":\"%s\"}\n", name, ec.message().c_str());
        return;
    }

    auto req = make();
    double const resign_ns = measure(
        [&] {
            auto ec = signer.sign(req, creds, params, now);
            sink = sink + static_cast<unsigned>(ec.value());
        },
        seconds);
    double const build_ns = measure(
        [&] {
            auto fresh = make();
            auto ec = signer.sign(fresh, creds, params, now);
            sink = sink + static_cast<unsigned>(ec.value()) + static_cast<unsigned>(fresh.target().size());
        },
        seconds);
    std::string_view const date8(steps.string_to_sign.data() + 17, 8);
    floor_crypto fc(baton::aws::derive_signing_key(creds.secret_access_key, date8, params.region, params.service));
    std::string_view const payload = body177;
    double const floor_ns = measure([&] { sink = sink + fc.run(payload, steps.canonical_request, steps.string_to_sign); },
                                    seconds);

    auto line = [&](char const* mode, double ns) {
        std::printf("{\"bench\":\"sigv4\",\"case\":\"%s\",\"mode\":\"%s\",\"body_bytes\":%zu,"
                    "\"canonical_request_bytes\":%zu,\"ns_per_op\":%.1f,\"ops_per_s\":%.0f",
                    name, mode, payload.size(), steps.canonical_request.size(), ns, 1e9 / ns);
        if (std::string_view(mode) != "floor") std::printf(",\"floor_ratio\":%.3f", floor_ns / ns);
        std::printf("}\n");
    };
    line("floor", floor_ns);
    line("resign", resign_ns);
    line("build+sign", build_ns);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    double const seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
    bench_case("dynamodb_putitem", make_dynamodb, baton::aws::signing_params::for_service("dynamodb", "us-east-1"),
               seconds);
    bench_case("s3_put", make_s3, baton::aws::signing_params::for_s3("us-east-1"), seconds);
    return 0;
}
