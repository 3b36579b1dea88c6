// libFuzzer target: the lease record decoder must refuse malformed input with
// errc::foreign_record and an explanation, never crash or misbehave; whatever
// it accepts must survive an encode/decode round trip unchanged.
#include <baton/recipe/detail/lease_record.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string_view text(reinterpret_cast<char const*>(data), size);
    baton::detail::lease_body body;
    baton::diagnostics diag;
    auto ec = baton::detail::decode_lease_body(text, body, diag);
    if (ec) {
        if (ec != baton::errc::foreign_record || diag.message.empty()) std::abort();
        return 0;
    }
    baton::detail::lease_body again;
    baton::diagnostics d2;
    if (baton::detail::decode_lease_body(baton::detail::encode_lease_body(body), again, d2)) std::abort();
    if (again.owner != body.owner || again.value != body.value || again.nonce != body.nonce || again.token != body.token ||
        again.released != body.released || again.ttl != body.ttl)
        std::abort();
    return 0;
}
