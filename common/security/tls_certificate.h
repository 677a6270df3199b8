// TLS material for the coordinator's REST server (issue 13): a self-signed certificate that
// `keyflow keys init` writes next to the CURVE keys (KeyDirectory::RestTlsCert/RestTlsKey), and
// the check that a certificate/key pair given with --rest-tls-cert/--rest-tls-key is usable.
//
// The certificate is its own CA (basicConstraints CA:TRUE), so a client pins it by using it as
// its CA file (`curl --cacert DIR/rest/tls.crt`, httplib's set_ca_cert_path). Its subject
// alternative names are `hosts` (DNS names and IP addresses); TLS clients check the host they
// connected to against them. Key: EC P-256; signature: SHA-256; valid for `valid_days`.
//
// Errors are sentences: an unwritable or existing file (never overwritten), an unreadable or
// malformed PEM, a key that does not belong to the certificate, an expired certificate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace keyflow {

struct SelfSignedCertificateOptions {
  std::string common_name = "keyflow-coordinator";
  // DNS names and IP literals for subjectAltName; DefaultRestTlsHosts() if empty.
  std::vector<std::string> hosts;
  int valid_days = 3650;
};

// localhost, 127.0.0.1, ::1, this host's name and its canonical (fully qualified) name.
std::vector<std::string> DefaultRestTlsHosts();

// Writes a new key (0600) and certificate (0644). AlreadyExists if either file exists.
Status WriteSelfSignedCertificate(const std::string& cert_path, const std::string& key_path,
                                  const SelfSignedCertificateOptions& options = {});

// A TLS server context (TLS 1.2 or newer) serving the certificate chain in `cert_path` with the
// key in `key_path`, after the checks of CheckTlsCertificateFiles. Thread-safe to share.
Result<std::shared_ptr<ssl_ctx_st>> LoadTlsServerContext(
    const std::string& cert_path, const std::string& key_path,
    const std::string& cert_flag = "--rest-tls-cert",
    const std::string& key_flag = "--rest-tls-key");

// Loads both files the way the REST server will and checks that the key matches the
// certificate and the certificate is currently valid. `cert_flag`/`key_flag` name the flags in
// messages.
Status CheckTlsCertificateFiles(const std::string& cert_path, const std::string& key_path,
                                const std::string& cert_flag = "--rest-tls-cert",
                                const std::string& key_flag = "--rest-tls-key");

}  // namespace keyflow
