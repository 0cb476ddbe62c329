// A few lines of Unihan_Readings.txt, the readings table the sound-alike
// tests (test_sound_alike.cpp, test_synth_sound.cpp) share.
#pragma once

#include "zibert/text/readings.hpp"

namespace zibert::test {

// 佛 has four readings across the fields, as in Unihan; 墙's homophones are
// 強 蔷 强 腔, its near-homophone (ang → an) 钱; 弗 and 胡 are read fu and hu.
inline const char* const kUnihanLines =
    "# Unihan_Readings.txt, a few lines\n"
    "U+4F5B\tkHanyuPinyin\t10142.070:fó,fú,bì,bó\n"
    "U+4F5B\tkMandarin\tfú\n"
    "U+4F5B\tkXHC1983\t0337.060:fó 0337.061:fú\n"
    "U+5899\tkMandarin\tqiáng\n"
    "U+5F17\tkMandarin\tfú\n"
    "U+5F37\tkMandarin\tqiáng\n"
    "U+5F3A\tkHanyuPinyin\t10987.010:qiáng,qiǎng,jiàng\n"
    "U+5F3A\tkMandarin\tqiáng\n"
    "U+5F3A\tkRSUnicode\t57.9\n"
    "U+773A\tkMandarin\ttiào\n"
    "U+80E1\tkMandarin\thú\n"
    "U+8154\tkMandarin\tqiāng\n"
    "U+8537\tkXHC1983\t0912.020:qiáng\n"
    "U+8DF3\tkMandarin\ttiào\n"
    "U+94B1\tkMandarin\tqián\n";


inline Readings unihan_lines_table() { return Readings::parse(kUnihanLines, "Unihan_Readings.txt"); }

}  // namespace zibert::test
