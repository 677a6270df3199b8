#include "common/security/sha256.h"

#include <gtest/gtest.h>

namespace keyflow {
namespace {

TEST(Sha256Test, MatchesTheFipsTestVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, IncrementalHashingEqualsOneShot) {
  std::string data(3 * 1000 + 7, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  Sha256 h;
  h.Update(std::string_view(data).substr(0, 1));
  h.Update(std::string_view(data).substr(1, 1999));
  h.Update(std::string_view(data).substr(2000));
  EXPECT_EQ(h.FinishHex(), Sha256Hex(data));
}

TEST(Sha256Test, IsSha256HexAcceptsOnlySixtyFourLowercaseHexDigits) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex(""));
  EXPECT_FALSE(IsSha256Hex(Sha256Hex("x").substr(1)));
  std::string upper = Sha256Hex("x");
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_FALSE(IsSha256Hex(upper));
  EXPECT_FALSE(IsSha256Hex("../../../../etc/passwd" + std::string(42, 'a')));
}

}  // namespace
}  // namespace keyflow
