// Part of store_bench (bench/store/main.cpp): figure 4, requests over one keep-alive connection,
// and figure 1 paired.
#ifndef BATON_BENCH_STORE_HTTP_HPP
#define BATON_BENCH_STORE_HTTP_HPP

namespace {

// ---- figure 4: requests over one keep-alive connection --------------------------------

// The exact bytes of ../shared/peers/e_raw_floor_curl.sh: an unsigned PutItem with the
// dummy Authorization header dynalite accepts (it checks the shape, not the signature).
constexpr std::string_view floor_put_body =
    R"({"TableName":"peer-floor","Item":{"id":{"S":"curl-put"},"owner":{"S":"curl"},"lease_ms":{"N":"10000"}}})";
constexpr std::string_view dummy_auth =
    "AWS4-HMAC-SHA256 Credential=AKIDLOCALPEERS/20250101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
    "Signature=0000000000000000000000000000000000000000000000000000000000000000";

baton::http::request ddb_request(baton::http::endpoint const& ep, std::string_view op, std::string body) {
    baton::http::request req{bhttp::verb::post, "/", 11};
    req.set(bhttp::field::host, ep.host_header());
    req.set(bhttp::field::content_type, "application/x-amz-json-1.0");
    req.set("X-Amz-Target", "DynamoDB_20120810." + std::string(op));
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

struct http_case {
    // A fresh request per call (signing included in the time): part `part` of operation `op`.
    std::function<baton::http::request(int op, int part)> make;
    int parts = 1; // requests per operation, sent one after the other
    baton::http::endpoint ep;
};

// Sequential requests through baton::http::client (one connection, kept alive).
void run_baton_client(http_case const& c, int warmup, int n, std::string const& variant) {
    asio::io_context ioc(1);
    baton::http::client client(ioc.get_executor());
    std::vector<double> lat;
    lat.reserve(static_cast<std::size_t>(n));
    int done = 0, non2xx = 0;
    bool finished = false;
    std::string error;
    clock_type::time_point t0, t_req;
    client_cost cost0, cost;
    int part = 0;
    auto info = std::make_shared<baton::http::request_info>();
    std::function<void()> next = [&] {
        if (part == 0) {
            if (done == warmup) {
                t0 = clock_type::now();
                cost0 = client_cost::now();
            }
            if (done >= warmup + n) {
                cost = client_cost::now() - cost0;
                finished = true;
                return;
            }
            t_req = clock_type::now();
        }
        *info = {};
        client.async_request(c.ep, c.make(done, part), *info, [&](error_code ec, baton::http::response res) {
            if (ec) {
                error = ec.message() + " " + info->diag.to_string();
                finished = true;
                return;
            }
            if (res.result_int() / 100 != 2) ++non2xx;
            if (++part == c.parts) {
                part = 0;
                if (done >= warmup) lat.push_back(ms_since(t_req));
                ++done;
            }
            next();
        });
    };
    next();
    if (!run_until(ioc, [&] { return finished; }, 120s)) die("http: timed out");
    if (!error.empty()) die("http: " + error);
    double const secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    char extra[128];
    std::snprintf(extra, sizeof extra, ",\"non2xx\":%d,\"connections_opened\":%" PRIu64, non2xx,
                  client.connections_opened());
    print_result("baton_http_client", variant, lat, secs, cost, extra);
}

// The same with a blocking Beast client on one socket: the least a client can do.
struct blocking_client {
    asio::io_context ioc{1};
    tcp::socket sock{ioc};
    boost::beast::flat_buffer buf;
    int non2xx = 0;

    explicit blocking_client(baton::http::endpoint const& ep) {
        sock.connect(tcp::endpoint(asio::ip::make_address(ep.host), ep.port));
        sock.set_option(tcp::no_delay(true));
    }

    // Operations [first, first + n) of `c`, each one's latency in ms appended to `lat` unless it is null.
    void run(http_case const& c, int first, int n, std::vector<double>* lat) {
        for (int i = first; i < first + n; ++i) {
            auto const t = clock_type::now();
            for (int part = 0; part < c.parts; ++part) {
                auto req = c.make(i, part);
                bhttp::write(sock, req);
                bhttp::response<bhttp::string_body> res;
                bhttp::read(sock, buf, res);
                if (res.result_int() / 100 != 2) ++non2xx;
                if (!res.keep_alive()) die("beast-sync: the server closed the connection");
            }
            if (lat) lat->push_back(ms_since(t));
        }
    }
};

// Operations [first, first + n) of `c` on `bc`, timed: latencies, wall time, the client's cost.
cycle_result run_timed(blocking_client& bc, http_case const& c, int first, int n) {
    cycle_result r;
    r.lat.reserve(static_cast<std::size_t>(n));
    auto const t0 = clock_type::now();
    auto const cost0 = client_cost::now();
    bc.run(c, first, n, &r.lat);
    r.secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    r.cost = client_cost::now() - cost0;
    return r;
}

void run_beast_sync(http_case const& c, int warmup, int n, std::string const& variant) {
    blocking_client bc(c.ep);
    bc.run(c, 0, warmup, nullptr);
    auto const r = run_timed(bc, c, warmup, n);
    print_result("beast_sync_client", variant, r.lat, r.secs, r.cost,
               ",\"non2xx\":" + std::to_string(bc.non2xx) + ",\"connections_opened\":1");
}

// e_raw_floor.js --variant cycle, in C++: PutItem attribute_not_exists + DeleteItem owner = :o,
// unsigned (dynalite checks the Authorization header's shape, not the signature).
http_case unsigned_cycle_case(baton::http::endpoint const& ep) {
    http_case c;
    c.ep = ep;
    c.parts = 2;
    c.make = [ep](int i, int part) {
        std::string const owner = "cxx-raw-" + std::to_string(i);
        auto r = part == 0
                     ? ddb_request(ep, "PutItem",
                                   R"({"TableName":"peer-floor","Item":{"id":{"S":"cxx-raw-lock"},"owner":{"S":")" +
                                       owner +
                                       R"j("},"lease_ms":{"N":"10000"}},"ConditionExpression":"attribute_not_exists(id)"})j")
                     : ddb_request(ep, "DeleteItem",
                                   R"({"TableName":"peer-floor","Key":{"id":{"S":"cxx-raw-lock"}},"ConditionExpression":"#o = :o",)"
                                   R"("ExpressionAttributeNames":{"#o":"owner"},"ExpressionAttributeValues":{":o":{"S":")" +
                                       owner + R"("}}})");
        r.set("X-Amz-Date", "20250101T000000Z");
        r.set(bhttp::field::authorization, dummy_auth);
        return r;
    };
    return c;
}

// The lease's own cycle, written by hand: a conditional PutItem of the held record, then one of
// the released record, each conditioned on the version the one before wrote, of the same shape
// and size as dynamodb_lease's, signed (cached key) as AWS requires. Table peer-floor, key id.
http_case signed_cycle_case(baton::http::endpoint const& ep, baton::aws::credentials creds,
                            baton::aws::signing_params const& signing) {
    baton::aws::sigv4_signer signer;
    http_case c;
    c.ep = ep;
    c.parts = 2;
    struct versions {
        std::uint64_t next = 0;
        std::string current; // empty: the item does not exist yet
    };
    auto v = std::make_shared<versions>();
    // A key of this run's own: its first write is conditioned on the item's absence.
    std::string const key = "cxx-signed-lock-" + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    c.make = [ep, creds, signing, signer, v, key](int i, int part) {
        char ver[33], nonce[33];
        std::snprintf(ver, sizeof ver, "%016llx%016llx", 0x5eedULL, static_cast<unsigned long long>(++v->next));
        std::snprintf(nonce, sizeof nonce, "%032llx", static_cast<unsigned long long>(i));
        std::string const token = std::to_string(i + 1);
        char const* const state = part == 0 ? "held" : "released";
        std::string body = R"({"TableName":"peer-floor","Item":{"id":{"S":")" + key + R"("},"ver":{"S":")";
        body += ver;
        body += R"("},"body":{"S":"{\"baton\":\"lease/1\",\"owner\":\"bench#04143e896126d105\",\"token\":)";
        body += token;
        body += R"(,\"nonce\":\")";
        body += nonce;
        body += R"(\",\"state\":\")";
        body += state;
        body += R"(\",\"ttl_ms\":20000,\"value\":\"\"}"},"baton":{"S":"lease/1"},"owner":{"S":"bench#04143e896126d105"},)";
        body += R"("token":{"N":")";
        body += token;
        body += R"("},"nonce":{"S":")";
        body += nonce;
        body += R"("},"state":{"S":")";
        body += state;
        body += R"("},"ttl_ms":{"N":"20000"},"value":{"S":""}},)";
        if (v->current.empty()) {
            body += R"j("ConditionExpression":"attribute_not_exists(#k)","ExpressionAttributeNames":{"#k":"id"})j";
        } else {
            body += R"("ConditionExpression":"#v = :v","ExpressionAttributeNames":{"#v":"ver"},)";
            body += R"("ExpressionAttributeValues":{":v":{"S":")" + v->current + R"("}})";
        }
        body += R"(,"ReturnValuesOnConditionCheckFailure":"ALL_OLD"})";
        v->current = ver;
        auto r = ddb_request(ep, "PutItem", std::move(body));
        r.set(bhttp::field::accept_encoding, "identity");
        if (signer.sign(r, creds, signing, std::chrono::system_clock::now())) die("signing failed");
        return r;
    };
    return c;
}

int cmd_http_ddb(args const& a) {
    int const n = static_cast<int>(a.num("n", 5000)), warmup = static_cast<int>(a.num("warmup", 200));
    std::string const op = a.str("op", "put-unsigned"), client = a.str("client", "baton");
    auto const p = ddb_params();
    auto const ep = baton::http::endpoint::from_url(p.endpoint);
    // The floor's table (peer-floor, key id) is made by the peers; make it here too so that this runs
    // alone. ensure_table waits until it is ACTIVE: before, dynalite answers ResourceNotFoundException
    // (for half a second), which a short run would measure instead of the writes.
    ensure_table("peer-floor", "id");
    http_case c;
    c.ep = ep;
    auto creds = p.credentials;
    auto const signing = baton::aws::signing_params::for_service("dynamodb", p.region);
    baton::aws::sigv4_signer signer;
    if (op == "cycle-unsigned") {
        c = unsigned_cycle_case(ep);
    } else if (op == "cycle-signed") {
        c = signed_cycle_case(ep, creds, signing);
    } else if (op == "put-unsigned") {
        c.make = [ep](int, int) {
            auto r = ddb_request(ep, "PutItem", std::string(floor_put_body));
            r.set("X-Amz-Date", "20250101T000000Z");
            r.set(bhttp::field::authorization, dummy_auth);
            return r;
        };
    } else if (op == "put-signed" || op == "get-signed") {
        bool const put = op == "put-signed";
        c.make = [ep, creds, signing, signer, put](int, int) {
            auto r = put ? ddb_request(ep, "PutItem", std::string(floor_put_body))
                         : ddb_request(ep, "GetItem",
                                       R"({"TableName":"peer-floor","Key":{"id":{"S":"curl-put"}},"ConsistentRead":true})");
            if (signer.sign(r, creds, signing, std::chrono::system_clock::now())) die("signing failed");
            return r;
        };
    } else {
        die("--op cycle-unsigned|cycle-signed|put-unsigned|put-signed|get-signed");
    }
    if (client == "baton") run_baton_client(c, warmup, n, "ddb-" + op);
    else if (client == "beast-sync") run_beast_sync(c, warmup, n, "ddb-" + op);
    else die("--client baton|beast-sync");
    return 0;
}

// Figure 1, paired: the lease's cycle and the blocking client's cycle (--floor signed: the same
// two requests, signed; unsigned: e_raw_floor.js's smaller cycle) in one process, in alternating
// blocks, the order swapped every block. Both then meet the server in the same state: dynalite's rate drifts by a third between runs a few
// seconds apart, which runs of one client after the other measure as a difference between them.
// One JSON line: the lease's figures, the floor's (floor_*), and the per-block ratios' median and
// quartiles (ratio_*: lease / floor; throughput higher is better, CPU lower).
int cmd_ddb_paired(args const& a) {
    int const blocks = static_cast<int>(a.num("blocks", 20)), block = static_cast<int>(a.num("block", 200)),
              warmup = static_cast<int>(a.num("warmup", 100));
    if (blocks < 1 || block < 1 || warmup < 0) die("--blocks and --block must be at least 1, --warmup at least 0");
    ensure_table();
    ensure_table("peer-floor", "id");
    auto const p = ddb_params();
    auto const ep = baton::http::endpoint::from_url(p.endpoint);
    asio::io_context ioc(1);
    baton::dynamodb_backend store(ioc.get_executor(), ddb_params());
    baton::dynamodb_lease lease(ioc.get_executor(), store,
                                lease_opts("bench/paired/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    std::string const floor_kind = a.str("floor", "signed");
    if (floor_kind != "signed" && floor_kind != "unsigned") die("--floor signed|unsigned");
    auto const make_case = [&] {
        return floor_kind == "signed"
                   ? signed_cycle_case(ep, p.credentials, baton::aws::signing_params::for_service("dynamodb", p.region))
                   : unsigned_cycle_case(ep);
    };
    http_case const floor = make_case();
    blocking_client bc(ep);
    // --control 1: the lease's side is a second blocking client (its own connection and key)
    // sending the floor's cycle, so the ratios measure the method itself; they should be ~1.
    bool const control = a.num("control", 0) != 0;
    http_case const twin = make_case(); // its own key
    std::optional<blocking_client> bc_twin;
    if (control) {
        if (floor_kind == "unsigned") die("--control needs --floor signed (the unsigned cycle has one fixed key)");
        bc_twin.emplace(ep);
    }

    auto blocking_block = [](blocking_client& c, http_case const& h, int& next, int n) {
        auto r = run_timed(c, h, next, n);
        next += n;
        return r;
    };
    int floor_next = 0, twin_next = 0;
    auto lease_block = [&](int n) {
        if (control) return blocking_block(*bc_twin, twin, twin_next, n);
        auto r = run_cycles(ioc, lease, 0, n, 60s);
        if (!r.error.empty()) die("baton_dynamodb_lease: " + r.error);
        return r;
    };
    auto floor_block = [&](int n) { return blocking_block(bc, floor, floor_next, n); };
    if (warmup > 0) {
        lease_block(warmup);
        floor_block(warmup);
    }
    struct side {
        std::vector<double> lat;
        double secs = 0;
        client_cost cost;
        void add(cycle_result const& r) {
            lat.insert(lat.end(), r.lat.begin(), r.lat.end());
            secs += r.secs;
            cost.cpu += r.cost.cpu;
            cost.user += r.cost.user;
            cost.allocs += r.cost.allocs;
        }
    } L, F;
    std::vector<double> ratio_ops, ratio_cpu, ratio_user;
    for (int b = 0; b < blocks; ++b) {
        cycle_result l, f;
        if (b % 2 == 0) {
            l = lease_block(block);
            f = floor_block(block);
        } else {
            f = floor_block(block);
            l = lease_block(block);
        }
        L.add(l);
        F.add(f);
        ratio_ops.push_back(f.secs / l.secs); // same count: the rates' ratio
        if (f.cost.cpu > 0) ratio_cpu.push_back(l.cost.cpu / f.cost.cpu);
        if (f.cost.user > 0) ratio_user.push_back(l.cost.user / f.cost.user);
    }
    if (bc.non2xx != 0 || (bc_twin && bc_twin->non2xx != 0)) die("beast-sync: some answers were not 2xx");
    double const n = static_cast<double>(F.lat.size());
    char extra[768];
    std::snprintf(extra, sizeof extra,
                  ",\"blocks\":%d,\"block\":%d,\"floor_ops_per_s\":%.1f,\"floor_p50_ms\":%.3f,\"floor_p99_ms\":%.3f,"
                  "\"floor_cpu_us_per_op\":%.1f,\"floor_user_us_per_op\":%.1f,\"floor_allocs_per_op\":%.1f,"
                  "\"ratio_ops\":%.3f,\"ratio_ops_q1\":%.3f,\"ratio_ops_q3\":%.3f,\"ratio_cpu\":%.3f,"
                  "\"ratio_cpu_q1\":%.3f,\"ratio_cpu_q3\":%.3f,\"ratio_user\":%.3f,\"ratio_user_q1\":%.3f,"
                  "\"ratio_user_q3\":%.3f,\"connections_opened\":%" PRIu64,
                  blocks, block, n / F.secs, pct(F.lat, 50), pct(F.lat, 99), F.cost.cpu * 1e6 / n, F.cost.user * 1e6 / n,
                  static_cast<double>(F.cost.allocs) / n, pct(ratio_ops, 50), pct(ratio_ops, 25), pct(ratio_ops, 75),
                  pct(ratio_cpu, 50), pct(ratio_cpu, 25), pct(ratio_cpu, 75), pct(ratio_user, 50),
                  pct(ratio_user, 25), pct(ratio_user, 75), lease.backend().client().connections_opened());
    print_result(control ? "beast_sync_client" : "baton_dynamodb_lease",
                 (control ? "control-paired-" : "cycle-paired-") + floor_kind, L.lat, L.secs, L.cost, extra);
    return 0;
}

// A trivial HTTP/1.1 server on its own thread: answers every request with a small JSON body.
class local_server {
public:
    local_server() : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this] { serve(); });
    }
    ~local_server() {
        stop_ = true;
        // Wake the accept or the read with a connection that closes at once.
        try {
            asio::io_context ioc;
            tcp::socket s(ioc);
            s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
        } catch (...) {
        }
        thread_.join();
    }
    unsigned short port() const { return port_; }

private:
    void serve() {
        while (!stop_) {
            tcp::socket sock(ioc_);
            error_code ec;
            acceptor_.accept(sock, ec);
            if (ec || stop_) return;
            sock.set_option(tcp::no_delay(true), ec);
            boost::beast::flat_buffer buf;
            for (;;) {
                bhttp::request<bhttp::string_body> req;
                bhttp::read(sock, buf, req, ec);
                if (ec) break;
                bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
                res.set(bhttp::field::content_type, "application/x-amz-json-1.0");
                res.body() = R"({"Item":{"id":{"S":"k"}}})";
                res.keep_alive(req.keep_alive());
                res.prepare_payload();
                bhttp::write(sock, res, ec);
                if (ec || !req.keep_alive()) break;
            }
        }
    }

    asio::io_context ioc_;
    tcp::acceptor acceptor_;
    unsigned short port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

int cmd_http_local(args const& a) {
    int const n = static_cast<int>(a.num("n", 20000)), warmup = static_cast<int>(a.num("warmup", 500));
    std::string const client = a.str("client", "baton");
    local_server server;
    http_case c;
    c.ep = baton::http::endpoint::from_url("http://127.0.0.1:" + std::to_string(server.port()));
    auto const ep = c.ep;
    c.make = [ep](int, int) {
        auto r = ddb_request(ep, "GetItem", R"({"TableName":"peer-floor","Key":{"id":{"S":"curl-put"}},"ConsistentRead":true})");
        r.set("X-Amz-Date", "20250101T000000Z");
        r.set(bhttp::field::authorization, dummy_auth);
        return r;
    };
    if (client == "baton") run_baton_client(c, warmup, n, "local");
    else if (client == "beast-sync") run_beast_sync(c, warmup, n, "local");
    else die("--client baton|beast-sync");
    return 0;
}

} // namespace

#endif
