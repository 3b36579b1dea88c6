// Part of the baton command-line tool (examples/cli/main.cpp). `baton kv`: get, put, rm, list.
#ifndef BATON_CLI_KV_HPP
#define BATON_CLI_KV_HPP

#include "stores.hpp"

namespace baton_cli {

// ---- kv --------------------------------------------------------------------

std::string base64(std::string_view in) {
    static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < in.size(); i += 3) {
        std::uint32_t n = std::uint32_t(static_cast<unsigned char>(in[i])) << 16;
        if (i + 1 < in.size()) n |= std::uint32_t(static_cast<unsigned char>(in[i + 1])) << 8;
        if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
        out += table[(n >> 18) & 63];
        out += table[(n >> 12) & 63];
        out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? table[n & 63] : '=';
    }
    return out;
}

// A value in JSON: as a string when it is UTF-8 text, else as "value_base64".
void put_value(boost::json::object& obj, std::string const& value) {
    if (baton::detail::is_utf8(value)) obj["value"] = value;
    else obj["value_base64"] = base64(value);
}

// Prints one line for a failed kv operation and returns its exit status.
int report_kv_error(store_context const& store, options const& o, baton::error_code ec, baton::kv_write_result const& r) {
    std::string const what = "kv " + o.kv_action + " '" + o.key + "'";
    if (ec == baton::errc::precondition_failed && (o.if_version || o.if_absent)) {
        std::fprintf(stderr, "baton: %s: %s\n", what.c_str(), r.diag.message.c_str());
        return exit_kv_precondition;
    }
    if (ec == baton::errc::fenced) {
        std::fprintf(stderr, "baton: %s: fenced: %s\n", what.c_str(), r.diag.message.c_str());
        return exit_kv_fenced;
    }
    return report_store_error(store, "cannot " + what, ec, r.diag, exit_failure);
}

template <class Kv>
int run_kv(asio::io_context& ioc, Kv& kv, options const& o, store_context const& store) {
    int code = exit_failure;
    auto on_write = [&](baton::error_code ec, baton::kv_write_result r) {
        if (ec) {
            code = report_kv_error(store, o, ec, r);
            return;
        }
        code = 0;
        if (o.json) {
            boost::json::object obj;
            obj["key"] = o.key;
            obj["version"] = r.version;
            obj["written"] = r.written;
            print_json(obj);
        } else {
            std::printf("%llu\n", static_cast<unsigned long long>(r.version));
        }
    };
    baton::kv_condition cond = o.if_absent ? baton::kv_condition::absent()
                               : o.if_version ? baton::kv_condition::version(*o.if_version)
                                              : baton::kv_condition::none();
    if (o.fence) cond = cond.with_fence(*o.fence);

    if (o.kv_action == "get") {
        kv.async_get(o.key, [&](baton::error_code ec, std::optional<baton::kv_entry> e) {
            std::string const what = "cannot kv get '" + o.key + "'";
            if (ec == baton::errc::not_found && !store.lock_container.empty()) {
                // The kv recipe's reads keep no diagnostics, and either part of a composed store
                // may be the one missing: the store's own read of the key says which (DynamoDB
                // answers ResourceNotFoundException for the lock table, S3 NoSuchBucket).
                kv.backend().async_get(o.key, [&, ec, what](baton::error_code again, baton::get_result r) {
                    bool const named = again == baton::errc::not_found;
                    code = report_store_error(store, what, named ? again : ec, named ? r.diag : baton::diagnostics{},
                                              exit_failure);
                });
                return;
            }
            if (ec) {
                code = report_store_error(store, what, ec, baton::diagnostics{}, exit_failure);
                if (ec == baton::errc::foreign_record)
                    std::fprintf(stderr, "baton: '%s' holds a record that 'baton kv' did not write\n", o.key.c_str());
                return;
            }
            if (!e) {
                code = exit_kv_absent;
                if (o.json) {
                    boost::json::object obj;
                    obj["key"] = o.key;
                    obj["version"] = nullptr;
                    print_json(obj);
                } else {
                    std::fprintf(stderr, "baton: kv get '%s': no value\n", o.key.c_str());
                }
                return;
            }
            code = 0;
            if (o.json) {
                boost::json::object obj;
                obj["key"] = o.key;
                obj["version"] = e->version;
                put_value(obj, e->value);
                obj["fence"] = e->fence;
                print_json(obj);
            } else {
                std::fwrite(e->value.data(), 1, e->value.size(), stdout);
            }
        });
    } else if (o.kv_action == "put") {
        std::string value;
        if (o.value) value = *o.value;
        else value.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        kv.async_put(o.key, std::move(value), cond, on_write);
    } else if (o.kv_action == "rm") {
        kv.async_erase(o.key, cond, on_write);
    } else {
        // list: every page, reading each key's value
        auto entries = std::make_shared<boost::json::array>();
        std::function<void(std::string)> page = [&](std::string after) {
            kv.async_list(o.key, std::move(after), 1000, [&, entries](baton::error_code ec, baton::kv_list_page p) {
                if (ec) {
                    code = report_store_error(store, "cannot kv list '" + o.key + "'", ec, p.diag, exit_failure);
                    return;
                }
                for (auto const& e : p.entries) {
                    if (o.json) {
                        boost::json::object obj;
                        obj["key"] = e.key;
                        obj["version"] = e.entry.version;
                        put_value(obj, e.entry.value);
                        entries->push_back(std::move(obj));
                    } else {
                        std::printf("%s\n", e.key.c_str());
                    }
                }
                if (p.truncated) return page(p.next_after);
                code = 0;
                if (o.json) print_json(*entries);
            });
        };
        page(std::string());
    }
    ioc.run();
    std::fflush(stdout);
    return code;
}

} // namespace baton_cli

#endif
