// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_DYNAMODB_STATE_HPP
#define BATON_BACKEND_DETAIL_DYNAMODB_STATE_HPP

// Layer: backends, internal. What the handles of one `dynamodb_backend` share:
// settings, the signed channel's prototype, and how an answer becomes a result
// (checksum, error body, table-level explanations).

#include <baton/backend/dynamodb_params.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/backend/detail/dynamodb_json.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#ifndef BATON_DOXYGEN
namespace baton::detail {

// DynamoDB says a session token expired with a 400 and `ExpiredTokenException` (header or body).
BATON_DECL bool dynamodb_expired_token(http::response const& res);

struct dynamodb_call_result {
    error_code ec;
    unsigned status = 0;
    std::string body;
    diagnostics diag;
};

struct dynamodb_state {
    dynamodb_state(dynamodb_backend_params p, http::client c)
        : params(std::move(p)), ep(http::endpoint::from_url(params.effective_endpoint())), client(std::move(c)),
          channel(client, ep, aws::signing_params::for_service("dynamodb", params.region), params.credentials,
                  params.credentials_provider, &dynamodb_expired_token) {}

    dynamodb_backend_params params;
    http::endpoint ep;
    http::client client;
    aws::signed_channel channel; // the prototype each handle copies (and may give its own signer)
    // Set once a failed condition came back with the current item: the service honours ALL_OLD.
    std::atomic<bool> returns_old_item{false};
    random_names names; // record versions and probe keys

    dynamodb::table_ref table() const noexcept { return {params.table, params.partition_key}; }

    std::string create_hint() const;

    std::string expected_schema() const;

    // Says what a table-level failure means in the caller's terms.
    void explain(diagnostics& d) const;

    dynamodb_call_result finish_call(std::string_view op, error_code ec, http::response res,
                                     http::request_info const& info) const;
};

} // namespace baton::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/dynamodb_state.ipp>
#endif

#endif
