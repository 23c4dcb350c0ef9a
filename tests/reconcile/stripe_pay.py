"""Pays with Stripe's own Python SDK against a Stripe API at API_BASE
(localstripe in the tests): COUNT PaymentIntents of AMOUNT minor units (USD)
for ACCOUNT (metadata.account_id), each confirmed with a test card, so each
makes a payment_intent.succeeded event. Prints each PaymentIntent's id.

usage: stripe_pay.py API_BASE COUNT ACCOUNT AMOUNT
"""

import sys

import stripe


def main():
    api_base, count, account, amount = sys.argv[1:5]
    stripe.api_key = "sk_test_hookledger"
    stripe.api_base = api_base
    for _ in range(int(count)):
        intent = stripe.PaymentIntent.create(
            amount=int(amount),
            currency="usd",
            payment_method="pm_card_visa",
            payment_method_types=["card"],
            confirm=True,
            metadata={"account_id": account},
        )
        if intent.status != "succeeded":
            sys.exit(f"{intent.id} is {intent.status}, not succeeded")
        print(intent.id)


if __name__ == "__main__":
    main()
