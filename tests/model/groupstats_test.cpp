#include "groupstats.h"

#include <gtest/gtest.h>
