// The REST server's TLS material: a self-signed certificate that clients can pin, written with
// private modes and never overwritten, and the checks behind --rest-tls-cert/--rest-tls-key.
#include "common/security/tls_certificate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include "common/file_io.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

namespace fs = std::filesystem;
using test::Mode;
using ::testing::HasSubstr;

class TlsCertificateTest : public ::testing::Test {
 protected:
  // The subjectAltName entries of the PEM certificate at `path`, as "DNS:x" / "IP:x".
  static std::vector<std::string> AltNames(const std::string& path) {
    std::vector<std::string> out;
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return out;
    X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    if (cert == nullptr) return out;
    auto* names =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
      if (n->type == GEN_DNS) {
        out.push_back("DNS:" + std::string(reinterpret_cast<const char*>(
                                   ASN1_STRING_get0_data(n->d.dNSName))));
      } else if (n->type == GEN_IPADD) {
        out.push_back("IP:" + std::to_string(ASN1_STRING_length(n->d.iPAddress)) + "bytes");
      }
    }
    GENERAL_NAMES_free(names);
    X509_free(cert);
    return out;
  }
  TempDir tmp_{"keyflow-tls"};
  const std::string dir_ = tmp_.path();
};

TEST_F(TlsCertificateTest, WritesAPinnableSelfSignedPairWithPrivateModes) {
  ::umask(0);
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  SelfSignedCertificateOptions o;
  o.hosts = {"localhost", "127.0.0.1", "::1", "coordinator.example"};
  ASSERT_OK(WriteSelfSignedCertificate(cert, key, o));
  ::umask(022);
  EXPECT_EQ(Mode(key), 0600u);
  EXPECT_EQ(Mode(cert), 0644u);
  EXPECT_OK(CheckTlsCertificateFiles(cert, key));
  EXPECT_EQ(AltNames(cert), (std::vector<std::string>{"DNS:localhost", "IP:4bytes", "IP:16bytes",
                                                      "DNS:coordinator.example"}));
}

TEST_F(TlsCertificateTest, DefaultHostsAreLoopbackAndThisHost) {
  const std::vector<std::string> hosts = DefaultRestTlsHosts();
  ASSERT_GE(hosts.size(), 3u);
  EXPECT_EQ(hosts[0], "localhost");
  EXPECT_EQ(hosts[1], "127.0.0.1");
  EXPECT_EQ(hosts[2], "::1");
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  EXPECT_THAT(hosts, ::testing::Contains(std::string(name)));
}

TEST_F(TlsCertificateTest, NeverOverwrites) {
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  ASSERT_OK(WriteSelfSignedCertificate(cert, key));
  std::ifstream in(key);
  const std::string before((std::istreambuf_iterator<char>(in)), {});
  Status again = WriteSelfSignedCertificate(cert, key);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_THAT(again.message(), HasSubstr("never overwritten"));
  std::ifstream in2(key);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in2)), {}), before);
}

TEST_F(TlsCertificateTest, UnusableFilesAreOneSentenceNamingTheFlag) {
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  ASSERT_OK(WriteSelfSignedCertificate(cert, key));
  const std::string other_cert = dir_ + "/other.crt", other_key = dir_ + "/other.key";
  ASSERT_OK(WriteSelfSignedCertificate(other_cert, other_key));

  Status missing = CheckTlsCertificateFiles(dir_ + "/nope.crt", key);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("--rest-tls-cert " + dir_ +
                                           "/nope.crt is not a "
                                           "readable PEM certificate"));
  Status swapped = CheckTlsCertificateFiles(key, cert);
  EXPECT_EQ(swapped.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(swapped.message(), HasSubstr("--rest-tls-cert"));
  Status garbage_key = CheckTlsCertificateFiles(cert, cert);
  EXPECT_THAT(garbage_key.message(), HasSubstr("--rest-tls-key " + cert +
                                               " is not a readable PEM "
                                               "private key"));
  Status mismatch = CheckTlsCertificateFiles(cert, other_key);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.message(), "--rest-tls-key " + other_key +
                                    " is not the key of the certificate " + cert +
                                    ": give the matching pair");
}

TEST_F(TlsCertificateTest, AnExpiredCertificateIsRefused) {
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  SelfSignedCertificateOptions o;
  o.valid_days = -1;  // notAfter yesterday
  ASSERT_OK(WriteSelfSignedCertificate(cert, key, o));
  Status expired = CheckTlsCertificateFiles(cert, key);
  EXPECT_EQ(expired.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(expired.message(), HasSubstr("has expired"));
}

}  // namespace
}  // namespace keyflow
