// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_XML_IPP
#define BATON_AWS_IMPL_XML_IPP
// Layer: wire (aws), internal. The compiled part of aws/detail/xml.hpp: the readers of S3's error
// and listing documents, on the parser of http/detail/xml.hpp.
#include <baton/aws/detail/xml.hpp>


namespace baton::detail::s3_xml {

BATON_DECL error_code parse_s3_error(std::string_view doc, s3_error& out, diagnostics& diag, xml_limits const& lim) {
    out = s3_error{};
    element root;
    if (auto ec = parse_xml(doc, root, diag, lim)) return ec;
    if (root.local_name() != "Error") {
        diag.message = "expected an S3 <Error> document, got <" + std::string(root.local_name()) + ">";
        return errc::invalid_response;
    }
    out.code = root.child_text("Code");
    if (out.code.empty()) {
        diag.message = "the S3 <Error> document has no <Code>";
        return errc::invalid_response;
    }
    out.message = root.child_text("Message");
    out.request_id = root.child_text("RequestId");
    out.host_id = root.child_text("HostId");
    out.resource = root.child_text("Resource");
    if (out.resource.empty()) out.resource = root.child_text("Key");
    return {};
}

BATON_DECL error_code parse_list_objects_v2(std::string_view doc, s3_listing& out, diagnostics& diag,
                                        xml_limits const& lim) {
    out = s3_listing{};
    element root;
    if (auto ec = parse_xml(doc, root, diag, lim)) return ec;
    auto bad = [&](std::string why) {
        diag.message = "invalid ListObjectsV2 response: " + std::move(why);
        return error_code(errc::invalid_response);
    };
    if (root.local_name() != "ListBucketResult")
        return bad("expected <ListBucketResult>, got <" + std::string(root.local_name()) + ">");
    auto const* enc = root.child("EncodingType");
    if (enc != nullptr) {
        if (enc->text != "url") return bad("unknown EncodingType '" + enc->text.substr(0, 32) + "'");
        out.url_encoded = true;
    }
    auto decode = [&](std::string_view v, std::string& to, char const* what) -> error_code {
        if (!out.url_encoded) {
            to.assign(v);
            return {};
        }
        auto d = url_decode(v);
        if (!d) return bad(std::string("a ") + what + " is not valid URL encoding");
        to = std::move(*d);
        return {};
    };
    auto const* trunc = root.child("IsTruncated");
    if (trunc == nullptr) return bad("no <IsTruncated>");
    if (trunc->text == "true")
        out.is_truncated = true;
    else if (trunc->text != "false")
        return bad("<IsTruncated> is neither 'true' nor 'false'");
    if (auto const* kc = root.child("KeyCount")) {
        std::size_t n = 0;
        if (kc->text.empty() || kc->text.size() > 9) return bad("<KeyCount> is not a number");
        for (char c : kc->text) {
            if (c < '0' || c > '9') return bad("<KeyCount> is not a number");
            n = n * 10 + static_cast<std::size_t>(c - '0');
        }
        out.key_count = n;
    }
    if (auto ec = decode(root.child_text("Prefix"), out.prefix, "prefix")) return ec;
    out.next_continuation_token = root.child_text("NextContinuationToken");
    if (out.is_truncated && out.next_continuation_token.empty())
        return bad("the page is truncated but has no <NextContinuationToken>");
    for (auto const& c : root.children) {
        if (c.local_name() == "Contents") {
            auto const* key = c.child("Key");
            auto const* etag = c.child("ETag");
            if (key == nullptr || key->text.empty()) return bad("a <Contents> has no <Key>");
            if (etag == nullptr || etag->text.empty()) return bad("a <Contents> has no <ETag>");
            s3_object o;
            if (auto ec = decode(key->text, o.key, "key")) return ec;
            o.etag = etag->text;
            out.contents.push_back(std::move(o));
        } else if (c.local_name() == "CommonPrefixes") {
            std::string p;
            if (auto ec = decode(c.child_text("Prefix"), p, "common prefix")) return ec;
            out.common_prefixes.push_back(std::move(p));
        }
    }
    return {};
}

} // namespace baton::detail::s3_xml

#endif
