#include "common/security/tls_certificate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/security/curve_keys.h"

namespace keyflow {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

// The newest OpenSSL error as text ("" if none), clearing the queue.
std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  std::string out;
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    out = buf;
  }
  ERR_clear_error();
  return out;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

Status AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return Internal("cannot build the certificate extension " + value + " (" + OpenSslError() +
                    "): report this as a bug");
  }
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Internal("cannot add a certificate extension: " + OpenSslError());
  return Status::Ok();
}

Result<std::string> ToPem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1) {
    return Internal("cannot encode PEM (" + OpenSslError() + "): report this as a bug");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

std::vector<std::string> DefaultRestTlsHosts() {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  auto add = [&hosts](const std::string& h) {
    if (!h.empty() && std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  };
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) {
    add(name);
    addrinfo hints{};
    hints.ai_flags = AI_CANONNAME;
    addrinfo* res = nullptr;
    if (getaddrinfo(name, nullptr, &hints, &res) == 0 && res != nullptr) {
      if (res->ai_canonname != nullptr) add(res->ai_canonname);
      freeaddrinfo(res);
    }
  }
  return hosts;
}

Status WriteSelfSignedCertificate(const std::string& cert_path, const std::string& key_path,
                                  const SelfSignedCertificateOptions& options) {
  const std::vector<std::string> hosts =
      options.hosts.empty() ? DefaultRestTlsHosts() : options.hosts;
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  if (key == nullptr || cert == nullptr) {
    return Internal("cannot generate a TLS key (" + OpenSslError() + "): check OpenSSL");
  }
  BnPtr serial(BN_new());
  if (serial == nullptr || BN_rand(serial.get(), 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr ||
      X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), options.valid_days, 0, nullptr) == nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1) {
    return Internal("cannot build a TLS certificate (" + OpenSslError() + "): check OpenSSL");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(options.common_name.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  std::string san;
  for (const std::string& h : hosts) {
    san += (san.empty() ? "" : ",") + std::string(IsIpLiteral(h) ? "IP:" : "DNS:") + h;
  }
  KF_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  KF_RETURN_IF_ERROR(
      AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign"));
  KF_RETURN_IF_ERROR(AddExtension(cert.get(), NID_ext_key_usage, "serverAuth"));
  KF_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_key_identifier, "hash"));
  KF_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_alt_name, san));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return Internal("cannot sign the TLS certificate (" + OpenSslError() + "): check OpenSSL");
  }
  KF_ASSIGN_OR_RETURN(std::string key_pem, ToPem([&key](BIO* b) {
                        return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr,
                                                        nullptr);
                      }));
  KF_ASSIGN_OR_RETURN(std::string cert_pem,
                      ToPem([&cert](BIO* b) { return PEM_write_bio_X509(b, cert.get()); }));
  struct stat st {};
  if (::stat(cert_path.c_str(), &st) == 0) {
    return AlreadyExists("TLS certificate " + cert_path +
                         " already exists: keys are never overwritten; remove it first if you "
                         "really mean to replace it");
  }
  KF_RETURN_IF_ERROR(WriteNewFile(key_path, key_pem, 0600, "TLS key"));
  return WriteNewFile(cert_path, cert_pem, 0644, "TLS certificate");
}

Result<std::shared_ptr<ssl_ctx_st>> LoadTlsServerContext(const std::string& cert_path,
                                                         const std::string& key_path,
                                                         const std::string& cert_flag,
                                                         const std::string& key_flag) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (ctx == nullptr) return Internal("cannot create a TLS context: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_path.c_str()) != 1) {
    return InvalidArgument(cert_flag + " " + cert_path + " is not a readable PEM certificate (" +
                           OpenSslError() +
                           "): give the certificate file, e.g. KEYS/rest/tls.crt from `keyflow "
                           "keys init`");
  }
  PkeyPtr key;
  if (BioPtr in(BIO_new_file(key_path.c_str(), "r")); in != nullptr) {
    key.reset(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr));
  }
  if (key == nullptr) {
    return InvalidArgument(key_flag + " " + key_path + " is not a readable PEM private key (" +
                           OpenSslError() +
                           "): give the certificate's key file, e.g. KEYS/rest/tls.key");
  }
  X509* cert = SSL_CTX_get0_certificate(ctx.get());
  if (cert == nullptr || X509_check_private_key(cert, key.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgument(key_flag + " " + key_path + " is not the key of the certificate " +
                           cert_path + ": give the matching pair");
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    return FailedPrecondition("the TLS certificate " + cert_path +
                              " has expired: create a new one (or remove KEYS/rest and run "
                              "`keyflow keys rest-tls KEYS`)");
  }
  return ctx;
}

Status CheckTlsCertificateFiles(const std::string& cert_path, const std::string& key_path,
                                const std::string& cert_flag, const std::string& key_flag) {
  return LoadTlsServerContext(cert_path, key_path, cert_flag, key_flag).status();
}

}  // namespace keyflow
