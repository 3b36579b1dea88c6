// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_IMPL_XML_IPP
#define BATON_HTTP_IMPL_XML_IPP
// Layer: wire (http), internal. The compiled part of http/detail/xml.hpp: the bounded XML parser.
#include <baton/http/detail/xml.hpp>


namespace baton::detail::xml {
namespace impl {

class parser {
public:
    parser(std::string_view in, xml_limits const& lim, diagnostics& diag) : in_(in), lim_(lim), diag_(diag) {}

    error_code run(element& root) {
        if (in_.size() > lim_.max_bytes)
            return fail_at(0, "the document is " + std::to_string(in_.size()) + " bytes, more than the limit of " +
                                  std::to_string(lim_.max_bytes));
        if (auto ec = check_chars()) return ec;
        if (in_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3; // byte order mark
        if (in_.substr(pos_, 5) == "<?xml") {
            if (auto ec = skip_pi()) return ec;
        }
        if (auto ec = skip_misc()) return ec;
        if (pos_ >= in_.size()) return fail("no root element");
        if (in_[pos_] != '<') return fail("text before the root element");
        if (auto ec = parse_element(root, 1)) return ec;
        if (auto ec = skip_misc()) return ec;
        if (pos_ != in_.size()) return fail("content after the root element");
        return {};
    }

private:
    std::string_view in_;
    xml_limits const& lim_;
    diagnostics& diag_;
    std::size_t pos_ = 0;
    std::size_t elements_ = 0;

    error_code fail_at(std::size_t at, std::string const& why) {
        diag_.message = "malformed XML at byte " + std::to_string(at) + ": " + why;
        return errc::invalid_response;
    }
    error_code fail(std::string const& why) { return fail_at(pos_, why); }

    bool at_end() const noexcept { return pos_ >= in_.size(); }
    bool starts(std::string_view s) const noexcept { return in_.substr(pos_, s.size()) == s; }

    // Well-formed UTF-8 and only the control characters XML 1.0 allows.
    error_code check_chars() {
        std::size_t i = 0;
        auto const n = in_.size();
        auto byte = [&](std::size_t k) { return static_cast<unsigned char>(in_[k]); };
        while (i < n) {
            unsigned char const c = byte(i);
            if (c < 0x80) {
                if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                    return fail_at(i, "control character " + std::to_string(c) + " is not allowed in XML");
                ++i;
                continue;
            }
            auto const ch = baton::detail::decode_utf8_at(in_, i);
            switch (ch.problem) {
            case baton::detail::utf8_problem::none: break;
            case baton::detail::utf8_problem::lead_byte: return fail_at(i, "invalid UTF-8 lead byte");
            case baton::detail::utf8_problem::truncated: return fail_at(i, "truncated UTF-8 sequence");
            case baton::detail::utf8_problem::continuation_byte: return fail_at(i, "invalid UTF-8 continuation byte");
            case baton::detail::utf8_problem::overlong: return fail_at(i, "overlong UTF-8 sequence");
            case baton::detail::utf8_problem::out_of_range: return fail_at(i, "a code point that XML does not allow");
            }
            if (ch.code_point == 0xFFFE || ch.code_point == 0xFFFF)
                return fail_at(i, "a code point that XML does not allow");
            i += ch.length;
        }
        return {};
    }

    static bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
    static bool is_name_start(char c) noexcept {
        auto const u = static_cast<unsigned char>(c);
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || u >= 0x80;
    }
    static bool is_name_char(char c) noexcept {
        return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
    }

    void skip_space() noexcept {
        while (!at_end() && is_space(in_[pos_])) ++pos_;
    }

    // Comments, processing instructions and white space between top-level constructs.
    error_code skip_misc() {
        for (;;) {
            skip_space();
            if (starts("<!--")) {
                if (auto ec = skip_comment()) return ec;
            } else if (starts("<?")) {
                if (auto ec = skip_pi()) return ec;
            } else if (starts("<!")) {
                return fail("DOCTYPE and other declarations are not accepted");
            } else {
                return {};
            }
        }
    }

    error_code skip_comment() {
        auto const start = pos_;
        auto const end = in_.find("-->", pos_ + 4);
        if (end == std::string_view::npos) return fail_at(start, "unterminated comment");
        pos_ = end + 3;
        return {};
    }

    error_code skip_pi() {
        auto const start = pos_;
        auto const end = in_.find("?>", pos_ + 2);
        if (end == std::string_view::npos) return fail_at(start, "unterminated processing instruction");
        pos_ = end + 2;
        return {};
    }

    error_code parse_name(std::string& out) {
        auto const start = pos_;
        if (at_end() || !is_name_start(in_[pos_])) return fail("expected a name");
        while (!at_end() && is_name_char(in_[pos_])) ++pos_;
        if (pos_ - start > lim_.max_name_bytes)
            return fail_at(start, "a name longer than " + std::to_string(lim_.max_name_bytes) + " bytes");
        out.assign(in_.substr(start, pos_ - start));
        return {};
    }

    static void append_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    // At '&': decodes one entity or character reference into `out`.
    error_code parse_reference(std::string& out) {
        auto const start = pos_;
        auto const semi = in_.find(';', pos_);
        if (semi == std::string_view::npos || semi - pos_ > 12) return fail_at(start, "unterminated entity reference");
        auto const ref = in_.substr(pos_ + 1, semi - pos_ - 1);
        pos_ = semi + 1;
        if (ref == "lt") { out += '<'; return {}; }
        if (ref == "gt") { out += '>'; return {}; }
        if (ref == "amp") { out += '&'; return {}; }
        if (ref == "quot") { out += '"'; return {}; }
        if (ref == "apos") { out += '\''; return {}; }
        if (ref.size() < 2 || ref[0] != '#') return fail_at(start, "unknown entity '&" + std::string(ref) + ";'");
        bool const hex = ref[1] == 'x';
        auto const digits = ref.substr(hex ? 2 : 1);
        if (digits.empty()) return fail_at(start, "empty character reference");
        std::uint32_t cp = 0;
        for (char c : digits) {
            std::uint32_t d = 0;
            if (c >= '0' && c <= '9') d = static_cast<std::uint32_t>(c - '0');
            else if (hex && c >= 'a' && c <= 'f') d = static_cast<std::uint32_t>(c - 'a' + 10);
            else if (hex && c >= 'A' && c <= 'F') d = static_cast<std::uint32_t>(c - 'A' + 10);
            else return fail_at(start, "invalid character reference");
            cp = cp * (hex ? 16u : 10u) + d;
            if (cp > 0x10FFFF) return fail_at(start, "character reference out of range");
        }
        bool const allowed = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                             (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
        if (!allowed) return fail_at(start, "character reference to a code point that XML does not allow");
        append_utf8(out, cp);
        return {};
    }

    // Attributes are kept (Azure marks encoded blob names with one); their number is bounded.
    error_code parse_attributes(element& e, bool& self_closing) {
        for (;;) {
            bool const spaced = !at_end() && is_space(in_[pos_]);
            skip_space();
            if (at_end()) return fail("unterminated start tag");
            if (in_[pos_] == '>') {
                ++pos_;
                self_closing = false;
                return {};
            }
            if (starts("/>")) {
                pos_ += 2;
                self_closing = true;
                return {};
            }
            if (!spaced) return fail("expected white space, '>' or '/>' in a start tag");
            if (e.attributes.size() == lim_.max_attributes)
                return fail("more than " + std::to_string(lim_.max_attributes) + " attributes on <" + e.name + ">");
            std::string name;
            if (auto ec = parse_name(name)) return ec;
            skip_space();
            if (at_end() || in_[pos_] != '=') return fail("expected '=' after an attribute name");
            ++pos_;
            skip_space();
            if (at_end() || (in_[pos_] != '"' && in_[pos_] != '\'')) return fail("expected a quoted attribute value");
            char const quote = in_[pos_++];
            std::string value;
            for (;;) {
                if (at_end()) return fail("unterminated attribute value");
                char const c = in_[pos_];
                if (c == quote) {
                    ++pos_;
                    break;
                }
                if (c == '<') return fail("'<' in an attribute value");
                if (c == '&') {
                    if (auto ec = parse_reference(value)) return ec;
                } else {
                    value += c;
                    ++pos_;
                }
            }
            e.attributes.emplace_back(std::move(name), std::move(value));
        }
    }

    error_code parse_element(element& e, std::size_t depth) {
        if (depth > lim_.max_depth)
            return fail("elements nested deeper than " + std::to_string(lim_.max_depth) + " levels");
        if (++elements_ > lim_.max_elements)
            return fail("more than " + std::to_string(lim_.max_elements) + " elements");
        ++pos_; // '<'
        if (auto ec = parse_name(e.name)) return ec;
        bool self_closing = false;
        if (auto ec = parse_attributes(e, self_closing)) return ec;
        if (self_closing) return {};
        for (;;) {
            if (at_end()) return fail("unterminated element <" + e.name + ">");
            char const c = in_[pos_];
            if (c == '&') {
                if (auto ec = parse_reference(e.text)) return ec;
                continue;
            }
            if (c != '<') {
                auto const next = in_.find_first_of("<&", pos_);
                auto const end = next == std::string_view::npos ? in_.size() : next;
                e.text.append(in_.substr(pos_, end - pos_));
                pos_ = end;
                continue;
            }
            if (starts("</")) {
                auto const close_at = pos_;
                pos_ += 2;
                std::string name;
                if (auto ec = parse_name(name)) return ec;
                skip_space();
                if (at_end() || in_[pos_] != '>') return fail("expected '>' to end a closing tag");
                ++pos_;
                if (name != e.name) return fail_at(close_at, "</" + name + "> closes <" + e.name + ">");
                return {};
            }
            if (starts("<!--")) {
                if (auto ec = skip_comment()) return ec;
                continue;
            }
            if (starts("<![CDATA[")) {
                auto const start = pos_;
                auto const end = in_.find("]]>", pos_ + 9);
                if (end == std::string_view::npos) return fail_at(start, "unterminated CDATA section");
                e.text.append(in_.substr(pos_ + 9, end - pos_ - 9));
                pos_ = end + 3;
                continue;
            }
            if (starts("<?")) {
                if (auto ec = skip_pi()) return ec;
                continue;
            }
            if (starts("<!")) return fail("declarations are not accepted inside elements");
            e.children.emplace_back();
            if (auto ec = parse_element(e.children.back(), depth + 1)) return ec;
        }
    }
};

} // namespace impl
} // namespace baton::detail::xml

namespace baton::detail::xml {

BATON_DECL error_code parse_xml(std::string_view doc, element& root, diagnostics& diag, xml_limits const& lim) {
    root = element{};
    impl::parser p(doc, lim, diag);
    return p.run(root);
}

BATON_DECL std::optional<std::string> url_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        char const c = s[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            if (s.size() - i < 3) return std::nullopt;
            int const hi = baton::detail::hex_value(s[i + 1]);
            int const lo = baton::detail::hex_value(s[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

} // namespace baton::detail::xml

namespace baton::detail::xml {

BATON_DECL std::string_view element::local_name() const noexcept {
    std::string_view n = name;
    auto const colon = n.find(':');
    return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

BATON_DECL element const* element::child(std::string_view n) const noexcept {
    for (auto const& c : children)
        if (c.local_name() == n) return &c;
    return nullptr;
}

BATON_DECL std::string_view element::child_text(std::string_view n) const noexcept {
    auto const* c = child(n);
    return c != nullptr ? std::string_view(c->text) : std::string_view{};
}

BATON_DECL std::string const* element::attribute(std::string_view n) const noexcept {
    for (auto const& a : attributes) {
        std::string_view const name = a.first;
        auto const colon = name.find(':');
        if ((colon == std::string_view::npos ? name : name.substr(colon + 1)) == n) return &a.second;
    }
    return nullptr;
}

} // namespace baton::detail::xml

#endif
