#include "runquery.h"

#include <gtest/gtest.h>
