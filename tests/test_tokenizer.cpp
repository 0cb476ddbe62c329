#include <catch2/catch.hpp>

#include "zibert/tokenizer.hpp"
