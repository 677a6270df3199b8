#include "worker/sources/json_prefix.h"

#include <gtest/gtest.h>

#include <string>

namespace keyflow {
namespace {

TEST(IsIncompleteJsonObjectTest, EveryProperPrefixOfAnObjectIsIncompleteTheObjectItselfIsNot) {
  const std::string objects[] = {
      R"({"uid":"user-1","ts":1700000000000})",
      R"(  { "uid" : "a\"b\\c\/\b\f\n\r\t\u00E9" , "ts" : -0.5E-7 , "n" : null })",
      "{\"k\":\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xED\x9F\xBF\xF4\x8F\xBF\xBF\"}",
      R"({"a":[],"b":{},"c":[[1,2],{"d":[true,false]}],"e":0,"f":10e5,"g":1.25})",
      R"({})",
  };
  for (const std::string& object : objects) {
    SCOPED_TRACE(object);
    const size_t start = object.find('{');
    for (size_t n = 0; n <= start; ++n) {
      EXPECT_FALSE(IsIncompleteJsonObject(object.substr(0, n))) << "blank prefix " << n;
    }
    for (size_t n = start + 1; n < object.size(); ++n) {
      EXPECT_TRUE(IsIncompleteJsonObject(object.substr(0, n))) << object.substr(0, n);
    }
    EXPECT_FALSE(IsIncompleteJsonObject(object));
    EXPECT_FALSE(IsIncompleteJsonObject(object + " \t\r"));
  }
}

TEST(IsIncompleteJsonObjectTest, TextNoContinuationCanMakeValidIsNotIncomplete) {
  for (const std::string text : {
           R"([{"uid":"a")",    // not an object
           R"("uid")",          // not an object
           R"(x{"uid":"a")",    // not JSON before the object
           R"({"uid":"a"}})",   // text after the object
           R"({"uid":"a"} {)",  // a second object
           R"({"uid" "a")",     // no colon
           R"({"uid":"a",})",   // a comma before the end
           R"({,)",             // a comma first
           R"({uid:)",          // a key without quotes
           R"({"a":01)",        // a leading zero
           R"({"a":1.e)",       // no digit after the point
           R"({"a":-x)",        // no digit after the minus
           R"({"a":1e+x)",      // no digit in the exponent
           R"({"a":tru )",      // a broken literal
           R"({"a":nul1)",      // a broken literal
           R"({"a":"\x)",       // an unknown escape
           R"({"a":"\u12g)",    // a bad \u escape
           R"({"a":[1 2)",      // no comma in an array
           R"({"a":[1,]})",     // a comma before the end of an array
           R"({"a":[}])",       // a mismatched end
           R"({"a":+1)",        // a plus sign
       }) {
    EXPECT_FALSE(IsIncompleteJsonObject(text)) << text;
  }
  // Control characters in strings and bytes that are not UTF-8.
  for (const std::string& text :
       {std::string("{\"a\":\"\x01"), std::string("{\"a\":\"\xC0\xAF"),
        std::string("{\"a\":\"\xED\xA0\x80"), std::string("{\"a\":\"\xF5"),
        std::string("{\"a\":\"\xE0\x80"), std::string("{\"a\":\"\xF4\x90"),
        std::string("{\"a\":\xC3\xA9")}) {
    EXPECT_FALSE(IsIncompleteJsonObject(text)) << text;
  }
}

TEST(IsIncompleteJsonObjectTest, AMultiByteCharacterCutInTheMiddleIsIncomplete) {
  EXPECT_TRUE(IsIncompleteJsonObject("{\"a\":\"\xF0"));
  EXPECT_TRUE(IsIncompleteJsonObject("{\"a\":\"\xF0\x9F"));
  EXPECT_TRUE(IsIncompleteJsonObject("{\"a\":\"\xF0\x9F\x98"));
  EXPECT_TRUE(IsIncompleteJsonObject("{\"a\":\"\xF0\x9F\x98\x80"));  // the string is still open
  EXPECT_TRUE(IsIncompleteJsonObject("{\"\xE2\x82"));                // in a key
}

TEST(IsIncompleteJsonObjectTest, DeepNestingIsScannedWithoutRecursion) {
  std::string text = "{\"a\":";
  for (int i = 0; i < 100'000; ++i) text += "[";
  EXPECT_TRUE(IsIncompleteJsonObject(text));
  for (int i = 0; i < 100'000; ++i) text += "]";
  EXPECT_TRUE(IsIncompleteJsonObject(text));
  EXPECT_FALSE(IsIncompleteJsonObject(text + "}"));
}

}  // namespace
}  // namespace keyflow
