"""The buyer's endpoints. Kept stable: the hostile-input suite and the load harness use them.

GET  /                                 what's on (?date=YYYY-MM-DD&theater=<id>); htmx: the list only
GET  /sessions/<id>/                   session page with the seat map; htmx: the map panel only
GET  /performances/<id>/                a sectioned venue (stadium): the sections and their free seats
GET  /sessions/<id>/map/               live map partial; ETag = session version, If-None-Match -> 304
                                       after one tiny read (the version) and nothing else
GET  /sessions/<id>/live/              the map's seat changes as Server-Sent Events (booking/web/live.py;
                                       ASGI); 204 when push is off or MongoDB keeps no change streams
POST /sessions/<id>/toggle             seat=r:c   hold a free seat, or release it when it is yours
POST /sessions/<id>/hold               seats=r:c (repeated or comma-separated)  hold these seats
POST /sessions/<id>/release            seats=r:c  release seats of your cart
POST /sessions/<id>/best               count=N    hold the best N adjacent seats
GET|POST /sessions/<id>/kinds/         how many of which kinds before the map (kind_<code>=N, clear);
                                       htmx: the picker alone; the seats then clicked take them in order
GET|POST /sessions/<id>/waiting-list/  a sold-out performance's waiting list: count, together,
                                       category, email -> the buyer's place (400/409 with a message)
GET|POST /waiting-list/offers/<token>/ a waiting-list offer's mailed link: a button whose POST puts
                                       the held seats in the buyer's cart (404 once it ended)
GET|POST /theaters/<id>/vouchers/      buy a gift voucher: value, name, e-mail (400 with a message),
                                       then /vouchers/bought/<token>/ pays it by card and says it is
                                       mailed (booking/presale/views/vouchers.py)
GET  /cart/                            your cart (the one in your buyer cookie; no URL takes a
                                       cart id, so another browser's cart is never reachable)
POST /cart/remove                      session=<id>&seat=r:c
POST /cart/cancel                      give up the cart, seats released
POST /cart/ticket-type                 session=<id>&seat=r:c&ticket_type=<code> (booking/presale/views/cart.py)
POST /cart/promo  code=<text>          apply a promo code (rate-limited); /cart/promo/remove takes it off
GET  /checkout/  POST name, email, method   checkout; errors inline (400), then the card form
                                       (htmx) or /orders/<ref>/ (booking/presale/views/checkout.py)
GET  /subscriptions/...                season subscriptions: list, common map, buy, renew
                                       (booking/presale/views/subscriptions.py)
GET  /orders/<ref>/                    confirmation with e-tickets (buyer's browser or found by ref+e-mail)
GET  /orders/<ref>/tickets/            printable tickets (same access)
GET  /orders/<ref>/calendar.ics        the booking as a calendar file (same access)
GET  /orders/<ref>/tickets/<code>.pkpass  one ticket as an Apple Wallet pass (same access)
GET|POST /orders/<ref>/exchange/       the buyer moves tickets to other seats of the show (theater's rules)
POST /orders/<ref>/cancel-tickets      ticket=<code> (repeated) or all=1: canceled, refunded less the fee
POST /orders/<ref>/transfer            ticket, name, email: the ticket handed on, a new code mailed
GET  /account/                         a signed-in buyer's bookings, else the sign-in form
POST /account/sign-in/                 e-mail -> a sign-in link mailed (same answer for any address)
GET|POST /account/enter/?sesame=...    the mailed link: a button, whose POST signs in (one use)
POST /account/sign-out/
GET|POST /find-booking/                ref, email -> /orders/<ref>/
GET  /tickets/<code>.svg               QR code of a ticket code
GET  /queue/<id>/                      waiting room of a high-demand sale (id: the session's, or the
                                       performance's); joins the buyer; admitted -> the seat map
GET  /queue/<id>/status                its panel for htmx polling (HX-Redirect when admitted)
GET  /queue/<id>/live/                 its panel pushed (Server-Sent Events, ASGI; 204: the page polls)

Seat POSTs answer: htmx -> 200 with only the seats the click changed (each swapped by its id,
out of band), the cart summary and the notice, ``HX-Reswap: none`` (the map stays) and
``X-Seatmap-Version``; when the action did not go through (a seat was just taken: 409-class engine
errors become a message) -> 200 with the refreshed map and the message; plain post -> 302 back to
the session page with a message. Bad input (malformed seat, off the map, count out of range) -> 400
with a message; unknown or malformed ids -> 404. Every POST needs the CSRF token (htmx sends it
in the X-CSRFToken header).
"""

from django.urls import path, re_path

from booking.presale.views import (
    account,
    cart,
    changes,
    checkout,
    exchange,
    listing,
    orders,
    payment,
    queue,
    seatmap,
    seats,
    subscriptions,
    ticket_kinds,
    vouchers,
    waiting_list,
)
from booking.web import live

app_name = "booking"

urlpatterns = [
    path("", listing.whats_on, name="whats_on"),
    path("performances/<str:performance_id>/", listing.performance_page, name="performance"),
    path("sessions/<str:session_id>/", seatmap.session_page, name="session"),
    path("sessions/<str:session_id>/map/", seatmap.seat_map, name="seat_map"),
    path("sessions/<str:session_id>/live/", live.session_live, name="seat_live"),
    path("sessions/<str:session_id>/toggle", seats.toggle_seat, name="toggle_seat"),
    path("sessions/<str:session_id>/hold", seats.hold, name="hold"),
    path("sessions/<str:session_id>/release", seats.release, name="release"),
    path("sessions/<str:session_id>/best", seats.best_available, name="best_available"),
    path("sessions/<str:session_id>/kinds/", ticket_kinds.choose, name="ticket_kinds"),
    path("sessions/<str:session_id>/access", seatmap.presale_access, name="presale_access"),
    path("sessions/<str:session_id>/waiting-list/", waiting_list.join, name="waiting_list_join"),
    path("waiting-list/offers/<str:token>/", waiting_list.offer, name="waiting_list_offer"),
    path("theaters/<str:theater_id>/vouchers/", vouchers.buy, name="voucher_buy"),
    path("vouchers/bought/<str:token>/", vouchers.bought, name="voucher_bought"),
    path("vouchers/bought/<str:token>/pay", vouchers.pay, name="voucher_pay"),
    path("vouchers/bought/<str:token>/status", vouchers.status, name="voucher_status"),
    path("cart/", cart.cart_page, name="cart"),
    path("cart/remove", cart.cart_remove, name="cart_remove"),
    path("cart/cancel", cart.cart_cancel, name="cart_cancel"),
    path("cart/ticket-type", cart.choose_ticket_type, name="cart_ticket_type"),
    path("cart/promo", cart.apply_promo, name="cart_promo"),
    path("cart/promo/remove", cart.remove_promo, name="cart_promo_remove"),
    path("checkout/", checkout.checkout, name="checkout"),
    path("subscriptions/", subscriptions.subscription_list, name="subscriptions"),
    path("subscriptions/renew/<str:token>/", subscriptions.renew, name="subscription_renew"),
    path("subscriptions/<str:subscription_id>/", subscriptions.subscription_page, name="subscription"),
    path("subscriptions/<str:subscription_id>/buy", subscriptions.buy, name="subscription_buy"),
    path("orders/<str:ref>/", orders.order_page, name="order"),
    path("orders/<str:ref>/tickets/", orders.order_tickets, name="order_tickets"),
    path("orders/<str:ref>/calendar.ics", orders.order_calendar_file, name="order_calendar"),
    re_path(
        r"^orders/(?P<ref>[^/]+)/tickets/(?P<code>[A-Za-z0-9_-]{16,64})\.pkpass$",
        orders.ticket_wallet_pass,
        name="ticket_wallet_pass",
    ),
    path("account/", account.account, name="account"),
    path("account/sign-in/", account.sign_in, name="account_sign_in"),
    path("account/enter/", account.enter, name="account_enter"),
    path("account/sign-out/", account.sign_out, name="account_sign_out"),
    path("find-booking/", orders.find_booking, name="find_booking"),
    re_path(r"^tickets/(?P<code>[A-Za-z0-9_-]{16,64})\.svg$", orders.ticket_qr, name="ticket_qr"),
    # the waiting room (booking/presale/views/queue.py)
    path("queue/<str:queue_id>/", queue.queue_page, name="queue"),
    path("queue/<str:queue_id>/status", queue.queue_status, name="queue_status"),
    path("queue/<str:queue_id>/live/", queue.queue_live, name="queue_live"),
    # payments (booking/presale/views/payment.py lists them)
    path("orders/<str:ref>/pay", payment.pay, name="pay"),
    path("orders/<str:ref>/payment", payment.payment_status, name="payment_status"),
    path("orders/<str:ref>/cancel-payment", payment.cancel_payment, name="cancel_payment"),
    path("orders/<str:ref>/receipt.pdf", payment.receipt_pdf, name="receipt"),
    path("orders/<str:ref>/exchange-pay", exchange.exchange_pay, name="exchange_pay"),
    path("payments/stripe/webhook/", payment.stripe_webhook, name="stripe_webhook"),
    # the buyer's own changes (booking/presale/views/changes.py)
    path("orders/<str:ref>/exchange/", changes.exchange, name="order_exchange"),
    path("orders/<str:ref>/cancel-tickets", changes.cancel_tickets, name="order_cancel_tickets"),
    path("orders/<str:ref>/transfer", changes.transfer_ticket, name="order_transfer"),
]
