// Part of the baton command-line tool (examples/cli/main.cpp). `baton probe --policy`: a bucket
// policy under which AWS S3 refuses writes and deletes without preconditions under the store's prefix.
#ifndef BATON_CLI_POLICY_HPP
#define BATON_CLI_POLICY_HPP

#include "stores.hpp"

namespace baton_cli {

// ---- probe --policy ---------------------------------------------------------
//
// The keys and the Deny shape are AWS's ("Enforce conditional writes" and "Enforce conditional
// deletes" in the S3 user guide): `s3:if-none-match` and `s3:if-match` are absent (Null) when
// the request lacks the header; `s3:ObjectCreationOperation` is false for CreateMultipartUpload,
// UploadPart and UploadPartCopy, which take no conditional header, so those are let through
// and the CompleteMultipartUpload that creates the object is held to the rule. Deny, not Allow:
// an identity policy's Allow would otherwise still let an unconditional write in.

// The partition of a region's ARNs: S3 refuses a policy whose Resource names another partition.
inline std::string arn_partition(std::string const& region) {
    if (region.rfind("cn-", 0) == 0) return "aws-cn";
    if (region.rfind("us-gov-", 0) == 0) return "aws-us-gov";
    return "aws";
}

// The policy, as `put-bucket-policy` takes it, for the objects under `prefix` in `bucket`.
inline std::string conditional_writes_policy(std::string const& partition, std::string const& bucket,
                                             std::string const& prefix) {
    std::string const resource = boost::json::serialize(boost::json::string("arn:" + partition + ":s3:::" + bucket + "/" + prefix + "*"));
    return "{\n"
           "  \"Version\": \"2012-10-17\",\n"
           "  \"Statement\": [\n"
           "    {\n"
           "      \"Sid\": \"BatonConditionalPutsOnly\",\n"
           "      \"Effect\": \"Deny\",\n"
           "      \"Principal\": \"*\",\n"
           "      \"Action\": \"s3:PutObject\",\n"
           "      \"Resource\": " + resource + ",\n"
           "      \"Condition\": {\n"
           "        \"Null\": {\n"
           "          \"s3:if-none-match\": \"true\",\n"
           "          \"s3:if-match\": \"true\"\n"
           "        },\n"
           "        \"Bool\": {\n"
           "          \"s3:ObjectCreationOperation\": \"true\"\n"
           "        }\n"
           "      }\n"
           "    },\n"
           "    {\n"
           "      \"Sid\": \"BatonConditionalDeletesOnly\",\n"
           "      \"Effect\": \"Deny\",\n"
           "      \"Principal\": \"*\",\n"
           "      \"Action\": \"s3:DeleteObject\",\n"
           "      \"Resource\": " + resource + ",\n"
           "      \"Condition\": {\n"
           "        \"Null\": {\n"
           "          \"s3:if-match\": \"true\"\n"
           "        }\n"
           "      }\n"
           "    }\n"
           "  ]\n"
           "}\n";
}

// Prints the policy on stdout (nothing else, so it can go straight to a file) and what it does
// and does not cover on stderr. Sends nothing: the policy depends only on the URL (and the
// region's partition).
inline int print_policy(store_url const& url, options const& o) {
    if (url.scheme != "s3")
        die(exit_usage, "--policy applies to s3:// stores only (a bucket policy is S3's); '" + url.text + "' is not one");
    if (!url.lock.empty())
        die(exit_usage, "--policy: the composed store ('?lock=') writes its objects without preconditions by design, so "
                        "a policy that demands them would lock baton out; its commits are guarded by the lock store");
    if (url.prefix.find_first_of("*?$") != std::string::npos)
        die(exit_usage, "--policy: the prefix '" + url.prefix +
                            "' holds '*', '?' or '$', which a policy's Resource reads as wildcards or variables");
    std::string const region = choose_region(o);
    std::string const partition = arn_partition(region);
    std::string const arn = "arn:" + partition + ":s3:::" + url.path + "/" + url.prefix + "*";
    std::string const policy = conditional_writes_policy(partition, url.path, url.prefix);
    std::fwrite(policy.data(), 1, policy.size(), stdout);
    std::fflush(stdout);
    std::string const scratch = url.prefix + baton::s3_backend_params{}.probe_prefix;
    std::fprintf(
        stderr,
        "baton: the policy above (stdout) makes AWS S3 refuse, to every principal, on\n"
        "%s:\n"
        "  - s3:PutObject without If-None-Match or If-Match: PutObject and CompleteMultipartUpload\n"
        "    (CreateMultipartUpload and UploadPart pass: they create no object); CopyObject into\n"
        "    the prefix fails even with a header (501, says AWS);\n"
        "  - s3:DeleteObject without If-Match: DeleteObject, DeleteObjects.\n"
        "baton itself passes: every PUT and DELETE it sends under the prefix carries one of them\n"
        "(leases, kv, fenced writes, lease tables, the probe's scratch keys under\n"
        "%s, deleted with If-Match on the ETag read back, also\n"
        "after a probe that failed midway), so nothing is exempted.\n"
        "apply it (put-bucket-policy REPLACES the bucket's policy: if 'aws s3api get-bucket-policy\n"
        "--bucket %s' shows one, add these two statements to it instead):\n"
        "  baton probe --store %s --policy > policy.json\n"
        "  aws s3api put-bucket-policy --bucket %s --policy file://policy.json\n"
        "not covered:\n"
        "  - a conditional write or delete with the current ETag, by anyone allowed s3:GetObject and\n"
        "    s3:PutObject or s3:DeleteObject: the policy demands preconditions, it cannot tell baton\n"
        "    from another conditional writer;\n"
        "  - s3:DeleteObjectVersion (a version deleted by id in a versioned bucket) and lifecycle\n"
        "    rules: keep both off the prefix;\n"
        "  - anyone allowed s3:PutBucketPolicy or s3:DeleteBucketPolicy can change or remove it;\n"
        "  - stores other than AWS S3 general purpose buckets: Ceph RGW 16.2 accepts the policy but\n"
        "    does not know these keys, so it lets every PUT through and refuses every DELETE under\n"
        "    the prefix, conditional or not, which fails baton's probe: apply it on AWS S3 only.\n"
        "see https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html and\n"
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-delete-enforce.html\n",
        arn.c_str(), scratch.c_str(), url.path.c_str(), url.text.c_str(), url.path.c_str());
    if (auto const chosen = choose_endpoint(o, "S3"); !chosen.url.empty())
        std::fprintf(stderr, "note: the endpoint %s (from %s) may not be AWS S3: see the last point above.\n",
                     chosen.url.c_str(), chosen.source.c_str());
    return 0;
}

} // namespace baton_cli

#endif
