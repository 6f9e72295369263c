/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: 66caf56efefe9617cf80a184887f0640d37d9824 */

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_ThrottleKit_Limiter___construct, 0, 0, 1)
	ZEND_ARG_TYPE_INFO(0, policy, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, store, IS_STRING, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_ThrottleKit_Limiter_check, 0, 1, ThrottleKit\\Decision, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, cost, IS_LONG, 0, "1")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_ThrottleKit_Limiter_peek, 0, 1, ThrottleKit\\Decision, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_ThrottleKit_Limiter_reset, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_ThrottleKit_Limiter_checkMany, 0, 1, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, keysOrRequests, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_ThrottleKit_Limiter_wait arginfo_class_ThrottleKit_Limiter_check

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_ThrottleKit_Decision___construct, 0, 0, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_ThrottleKit_Decision_retryAfterSeconds, 0, 0, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_ThrottleKit_Decision_headers, 0, 0, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, style, IS_STRING, 0, "\"ietf\"")
ZEND_END_ARG_INFO()


ZEND_METHOD(ThrottleKit_Limiter, __construct);
ZEND_METHOD(ThrottleKit_Limiter, check);
ZEND_METHOD(ThrottleKit_Limiter, peek);
ZEND_METHOD(ThrottleKit_Limiter, reset);
ZEND_METHOD(ThrottleKit_Limiter, checkMany);
ZEND_METHOD(ThrottleKit_Limiter, wait);
ZEND_METHOD(ThrottleKit_Decision, __construct);
ZEND_METHOD(ThrottleKit_Decision, retryAfterSeconds);
ZEND_METHOD(ThrottleKit_Decision, headers);


static const zend_function_entry class_ThrottleKit_Limiter_methods[] = {
	ZEND_ME(ThrottleKit_Limiter, __construct, arginfo_class_ThrottleKit_Limiter___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Limiter, check, arginfo_class_ThrottleKit_Limiter_check, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Limiter, peek, arginfo_class_ThrottleKit_Limiter_peek, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Limiter, reset, arginfo_class_ThrottleKit_Limiter_reset, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Limiter, checkMany, arginfo_class_ThrottleKit_Limiter_checkMany, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Limiter, wait, arginfo_class_ThrottleKit_Limiter_wait, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_ThrottleKit_Decision_methods[] = {
	ZEND_ME(ThrottleKit_Decision, __construct, arginfo_class_ThrottleKit_Decision___construct, ZEND_ACC_PRIVATE)
	ZEND_ME(ThrottleKit_Decision, retryAfterSeconds, arginfo_class_ThrottleKit_Decision_retryAfterSeconds, ZEND_ACC_PUBLIC)
	ZEND_ME(ThrottleKit_Decision, headers, arginfo_class_ThrottleKit_Decision_headers, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_ThrottleKit_Exception_methods[] = {
	ZEND_FE_END
};


static const zend_function_entry class_ThrottleKit_StoreException_methods[] = {
	ZEND_FE_END
};

static zend_class_entry *register_class_ThrottleKit_Limiter(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "ThrottleKit", "Limiter", class_ThrottleKit_Limiter_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;


	zend_add_parameter_attribute(zend_hash_str_find_ptr(&class_entry->function_table, "__construct", sizeof("__construct") - 1), 1, ZSTR_KNOWN(ZEND_STR_SENSITIVEPARAMETER), 0);

	return class_entry;
}

static zend_class_entry *register_class_ThrottleKit_Decision(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "ThrottleKit", "Decision", class_ThrottleKit_Decision_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval property_allowed_default_value;
	ZVAL_UNDEF(&property_allowed_default_value);
	zend_string *property_allowed_name = zend_string_init("allowed", sizeof("allowed") - 1, 1);
	zend_declare_typed_property(class_entry, property_allowed_name, &property_allowed_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_BOOL));
	zend_string_release(property_allowed_name);

	zval property_limit_default_value;
	ZVAL_UNDEF(&property_limit_default_value);
	zend_string *property_limit_name = zend_string_init("limit", sizeof("limit") - 1, 1);
	zend_declare_typed_property(class_entry, property_limit_name, &property_limit_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_limit_name);

	zval property_remaining_default_value;
	ZVAL_UNDEF(&property_remaining_default_value);
	zend_string *property_remaining_name = zend_string_init("remaining", sizeof("remaining") - 1, 1);
	zend_declare_typed_property(class_entry, property_remaining_name, &property_remaining_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_remaining_name);

	zval property_resetAt_default_value;
	ZVAL_UNDEF(&property_resetAt_default_value);
	zend_string *property_resetAt_name = zend_string_init("resetAt", sizeof("resetAt") - 1, 1);
	zend_declare_typed_property(class_entry, property_resetAt_name, &property_resetAt_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_resetAt_name);

	zval property_retryAfter_default_value;
	ZVAL_UNDEF(&property_retryAfter_default_value);
	zend_string *property_retryAfter_name = zend_string_init("retryAfter", sizeof("retryAfter") - 1, 1);
	zend_declare_typed_property(class_entry, property_retryAfter_name, &property_retryAfter_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_retryAfter_name);

	zval property_delay_default_value;
	ZVAL_UNDEF(&property_delay_default_value);
	zend_string *property_delay_name = zend_string_init("delay", sizeof("delay") - 1, 1);
	zend_declare_typed_property(class_entry, property_delay_name, &property_delay_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_delay_name);

	zval property_degraded_default_value;
	ZVAL_UNDEF(&property_degraded_default_value);
	zend_string *property_degraded_name = zend_string_init("degraded", sizeof("degraded") - 1, 1);
	zend_declare_typed_property(class_entry, property_degraded_name, &property_degraded_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_BOOL));
	zend_string_release(property_degraded_name);

	return class_entry;
}

static zend_class_entry *register_class_ThrottleKit_Exception(zend_class_entry *class_entry_InvalidArgumentException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "ThrottleKit", "Exception", class_ThrottleKit_Exception_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_InvalidArgumentException);

	return class_entry;
}

static zend_class_entry *register_class_ThrottleKit_StoreException(zend_class_entry *class_entry_RuntimeException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "ThrottleKit", "StoreException", class_ThrottleKit_StoreException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_RuntimeException);

	return class_entry;
}
