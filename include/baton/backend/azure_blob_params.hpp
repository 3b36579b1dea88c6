// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_AZURE_BLOB_PARAMS_HPP
#define BATON_BACKEND_AZURE_BLOB_PARAMS_HPP

/** @file
    Layer: backends. The settings of `azure_blob_backend` (`azure_blob_backend_params`, validated
    when a backend is made) and when it checks what the endpoint honours
    (`azure_precondition_check`). The backend is in `<baton/backend/azure_blob.hpp>`.
*/

#include <baton/azure/account.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/options.hpp>

#include <cstddef>
#include <string>

namespace baton {

/// When `azure_blob_backend` checks what the endpoint honours (as for S3: see `<baton/backend/azure_blob.hpp>`).
enum class azure_precondition_check {
    /// Probe once before the first conditional put or erase; refuse conditional operations the store ignores. Default.
    probe_first,
    /// Never probe implicitly (one round of requests less at start), unless `async_probe` is called.
    trust,
};

/** Settings of an `azure_blob_backend`. Checked by `validate()` when the backend is constructed.

    Rules:
    - `account`: a name (3 to 24 lower-case letters and digits, or an emulator's name such as
      `devstoreaccount1`), a `blob_endpoint` of the form `http[s]://host[:port][/path]` without a
      query, and a key (base64) or a SAS token, or neither (anonymous: public containers only);
    - `container`: 3 to 63 characters `a-z 0-9 -`, starting with a letter or digit, no `--`, not
      ending with `-` (Azure's container naming rules);
    - `key_prefix` and `probe_prefix` leave room for keys (together at most 960 bytes; `probe_prefix` not empty);
    - 0 < `max_body_bytes` ≤ `http.max_response_body_bytes`;
    - `http` obeys `http::client_options::validate`.
*/
struct azure_blob_backend_params {
    /// The storage account: its name, Blob endpoint and credentials (`azure::account_from_environment`
    /// reads them as the Azure CLI does). The key and the SAS signature never appear in messages.
    azure::account account;
    /// The container. Required; the backend does not create it (see `azure_blob_backend::async_create_container`).
    std::string container;
    /// Prepended to every key (e.g. `locks/`); listings strip it again.
    std::string key_prefix;
    /// Connection, timeout and size settings of the HTTP client.
    http::client_options http;
    /// Largest body a put accepts; larger ones fail with `errc::invalid_argument`. Default 5 MiB.
    std::size_t max_body_bytes = 5u * 1024u * 1024u;
    /// When the endpoint's handling of preconditions is checked. Default `probe_first`.
    azure_precondition_check preconditions = azure_precondition_check::probe_first;
    /** Where (under `key_prefix`) the probe writes its scratch blobs; each probe uses a fresh random
        name and deletes it afterwards. Listings of a prefix covering it may briefly show one.
    */
    std::string probe_prefix = ".baton-probe/";

    /// Checks the rules above. @throws config_error naming the field that breaks one (never echoing secrets).
    void validate() const;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/azure_blob_params.ipp>
#endif

#endif
